// Owns Idempotency-Key records (docs/integrations.md, "Retrying safely"): what identifies one (caller, route, key), the
// fingerprint of the request it answered, reading and writing the record, and sealing its answer
// (AES-256-GCM under a key derived from the server's secrets: an answer may carry a secret shown
// once, such as a new API key, which the store must not keep readable).
import { createCipheriv, createDecipheriv, createHash, createHmac, randomBytes } from 'node:crypto';
import { type Param, prepared } from '../db/prepared.js';
import type { Executor } from '../db/types.js';

/** How long an answer is kept and replayed. */
export const KEEP_MS = 24 * 3600_000;

/** 1–255 visible ASCII characters, as docs/integrations.md says. */
export const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

export interface RecordId {
  caller: string;
  route: string;
  key: string;
}

export interface StoredAnswer {
  fingerprint: string;
  status: number;
  body: string;
}

/** SHA-256 of what makes two requests the same request: the URL (with its query) and the body. */
export const fingerprintOf = (url: string, body: unknown): string =>
  createHash('sha256')
    .update(`${url}\n${JSON.stringify(body ?? null)}`)
    .digest('base64url');

const findRecord = prepared((db, p: Param<{ caller: string; route: string; key: string; now: string }>) =>
  db
    .selectFrom('idempotency_keys')
    .select(['fingerprint', 'status', 'body'])
    .where('caller', '=', p('caller'))
    .where('route', '=', p('route'))
    .where('key', '=', p('key'))
    .where('expires_at', '>', p('now')),
);

/** The answer kept for a key, unless it is older than KEEP_MS. */
export const readAnswer = (x: Executor, id: RecordId): Promise<StoredAnswer | undefined> =>
  x.first(findRecord, { ...id, now: new Date().toISOString() });

/**
 * Writes the answer (in the transaction of the change it answers). An expired record of the same
 * key, not yet purged, is replaced.
 */
export async function writeAnswer(x: Executor, id: RecordId, answer: StoredAnswer): Promise<void> {
  const now = Date.now();
  await x
    .deleteFrom('idempotency_keys')
    .where('caller', '=', id.caller)
    .where('route', '=', id.route)
    .where('key', '=', id.key)
    .where('expires_at', '<=', new Date(now).toISOString())
    .execute();
  await x
    .insertInto('idempotency_keys')
    .values({
      ...id,
      ...answer,
      created_at: new Date(now).toISOString(),
      expires_at: new Date(now + KEEP_MS).toISOString(),
    })
    .execute();
}

/** Deletes records past their 24 hours. */
export async function purgeAnswers(x: Executor): Promise<void> {
  await x.deleteFrom('idempotency_keys').where('expires_at', '<=', new Date().toISOString()).execute();
}

/**
 * Seals answers with the first secret's key and opens them with any (a rotated JWT_SECRET still
 * listed in JWT_SECRET_PREVIOUS keeps the answers sealed under it readable).
 */
export class AnswerSealer {
  private readonly keys: Buffer[];
  constructor(secrets: readonly string[]) {
    this.keys = secrets.map((s) => createHmac('sha256', s).update('gma idempotency answers v1').digest());
  }

  seal(text: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.keys[0]!, iv);
    const data = Buffer.concat([cipher.update(text, 'utf8'), cipher.final()]);
    return `${iv.toString('base64url')}.${cipher.getAuthTag().toString('base64url')}.${data.toString('base64url')}`;
  }

  /** The text, or null when no key opens it. */
  open(sealed: string): string | null {
    const [iv, tag, data] = sealed.split('.');
    if (iv === undefined || tag === undefined || data === undefined) return null;
    for (const key of this.keys) {
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
        decipher.setAuthTag(Buffer.from(tag, 'base64url'));
        return Buffer.concat([decipher.update(Buffer.from(data, 'base64url')), decipher.final()]).toString('utf8');
      } catch {
        // Not this key: try the next.
      }
    }
    return null;
  }
}

/** A 64-bit advisory lock id for a record (PostgreSQL), as a decimal string. */
export function lockIdOf(id: RecordId): string {
  const digest = createHash('sha256').update(`${id.caller}\u0000${id.route}\u0000${id.key}`).digest();
  return digest.readBigInt64BE(0).toString();
}

/** Whether a route takes an Idempotency-Key: every authenticated POST, and routes that opt in. */
export function takesIdempotencyKey(
  method: string | string[],
  config: { access?: unknown; idempotent?: boolean } | undefined,
): boolean {
  if (config?.access === undefined || config.access === 'public') return false;
  return config.idempotent ?? method === 'POST';
}
