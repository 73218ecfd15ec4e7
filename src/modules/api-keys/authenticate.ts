// Owns authenticating an API key for the gate (src/plugins/gate.ts): the key's row as stored now
// (kept between changes to the store on SQLite, read on every request on PostgreSQL, so a
// revocation or a narrowing made on any instance holds on the next request everywhere), its secret
// checked against the stored hash (or the replaced one during a rotation's grace period), and its
// lastUsedAt written at most once a minute per key. A stream ticket a key made (src/modules/events/
// tickets.ts) is admitted the same way, by the stored hash the key's secret matched when it was made.
import type { FastifyInstance } from 'fastify';
import type { AuthUser, Scope } from '../../lib/auth.js';
import { authError } from '../../lib/errors.js';
import { type KeyAuthRow, keyForAuth, touchApiKey } from './repository.js';
import { parseKey } from './secret.js';

/** How often lastUsedAt is written per key, at most. */
const TOUCH_EVERY_MS = 60_000;
/** Keys whose row is kept between changes to the store (SQLite); past this, rows are read each time. */
const MAX_KEPT = 10_000;

const invalid = (message: string) => authError('TOKEN_INVALID', message, true);

export function keyAuthenticator(app: FastifyInstance) {
  const rows = new Map<string, KeyAuthRow | undefined>();
  let readAt: string | null = null;
  const touched = new Map<string, number>();

  /**
   * The caller `row` admits with `proof`: a secret sent (checked against the stored hashes) or, with
   * `byHash`, a stored hash a ticket recorded (compared with them).
   */
  const admit = (row: KeyAuthRow | undefined, proof: string, byHash = false): AuthUser => {
    const hasher = app.ctx.apiKeys;
    if (row === undefined) throw invalid('The API key does not exist');
    const now = Date.now();
    const current = byHash ? proof === row.secret_hash : hasher.matches(proof, row.secret_hash);
    const previous =
      !current &&
      row.previous_hash !== null &&
      row.previous_expires_at !== null &&
      new Date(row.previous_expires_at).getTime() > now &&
      (byHash ? proof === row.previous_hash : hasher.matches(proof, row.previous_hash));
    if (!current && !previous) throw invalid('The API key is not valid');
    if (row.revoked_at !== null) throw invalid('The API key has been revoked');
    const expires = row.expires_at === null ? null : new Date(row.expires_at).getTime();
    if (expires !== null && expires <= now) {
      throw authError('TOKEN_EXPIRED', 'The API key has expired; an admin can create a new one', true);
    }
    touch(row.id, now);
    return {
      kind: 'api_key',
      id: row.id,
      // An API key acts with an admin's reach over the records its scopes allow.
      role: 'admin',
      name: row.name,
      email: '',
      department: null,
      jti: row.id,
      exp: expires === null ? Number.MAX_SAFE_INTEGER : Math.floor(expires / 1000),
      scopes: JSON.parse(row.scopes) as Scope[],
      secretHash: current ? row.secret_hash : (row.previous_hash as string),
    };
  };

  /** Writes lastUsedAt when this process has not in the last minute; the write never fails a request. */
  const touch = (id: string, now: number) => {
    const last = touched.get(id);
    if (last !== undefined && now - last < TOUCH_EVERY_MS) return;
    if (touched.size >= MAX_KEPT) touched.clear();
    touched.set(id, now);
    const params = {
      id,
      now: new Date(now).toISOString(),
      before: new Date(now - TOUCH_EVERY_MS).toISOString(),
    };
    app.ctx.store.run(touchApiKey, params).catch((err: unknown) => {
      app.log.warn({ err }, 'could not record an API key use');
    });
  };

  /** The key `id` as admitted by `proof` (see admit); at once while its row is kept. */
  const authenticate = (id: string, proof: string, byHash: boolean): AuthUser | Promise<AuthUser> => {
    const version = app.ctx.store.readVersion();
    if (version !== null) {
      if (version !== readAt) {
        rows.clear();
        readAt = version;
      } else if (rows.has(id)) {
        return admit(rows.get(id), proof, byHash);
      }
    }
    return app.ctx.store.first(keyForAuth, { id }).then((row) => {
      // Kept under the version read before the query: a write in between moves it.
      if (version !== null && version === readAt && rows.size < MAX_KEPT) rows.set(id, row);
      return admit(row, proof, byHash);
    });
  };

  return {
    /** A key sent as a bearer credential (`gma_<id>_<secret>`). */
    byCredential(credential: string): AuthUser | Promise<AuthUser> {
      const parsed = parseKey(credential);
      if (parsed === null) throw invalid('The API key is malformed');
      return authenticate(parsed.id, parsed.secret, false);
    },
    /** A key by the stored hash its secret matched when it made a stream ticket. */
    byStoredHash(id: string, secretHash: string): AuthUser | Promise<AuthUser> {
      return authenticate(id, secretHash, true);
    },
  };
}
