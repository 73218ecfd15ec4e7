// Owns authenticating an API key for the gate (src/plugins/gate.ts): the key's row as stored now
// (kept between changes to the store on SQLite, read on every request on PostgreSQL, so a
// revocation or a narrowing made on any instance holds on the next request everywhere), its secret
// checked against the stored hash (or the replaced one during a rotation's grace period), and its
// lastUsedAt written at most once a minute per key.
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

  const admit = (row: KeyAuthRow | undefined, secret: string): AuthUser => {
    const hasher = app.ctx.apiKeys;
    if (row === undefined) throw invalid('The API key does not exist');
    const now = Date.now();
    const current = hasher.matches(secret, row.secret_hash);
    const previous =
      !current &&
      row.previous_hash !== null &&
      row.previous_expires_at !== null &&
      new Date(row.previous_expires_at).getTime() > now &&
      hasher.matches(secret, row.previous_hash);
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

  return (credential: string): AuthUser | Promise<AuthUser> => {
    const parsed = parseKey(credential);
    if (parsed === null) throw invalid('The API key is malformed');
    const { id, secret } = parsed;
    const version = app.ctx.store.readVersion();
    if (version !== null) {
      if (version !== readAt) {
        rows.clear();
        readAt = version;
      } else if (rows.has(id)) {
        return admit(rows.get(id), secret);
      }
    }
    return app.ctx.store.first(keyForAuth, { id }).then((row) => {
      // Kept under the version read before the query: a write in between moves it.
      if (version !== null && version === readAt && rows.size < MAX_KEPT) rows.set(id, row);
      return admit(row, secret);
    });
  };
}
