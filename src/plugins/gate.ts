// Owns the one hook every request passes: authenticate the bearer token or API key, count the
// request in its rate-limit bucket (keyed by staff id or API key id, else IP), set the
// X-RateLimit-* headers, then enforce what the route declared: the roles in `config.access` for a
// staff token, the scope in `config.scope` for an API key. Routes declare; this file enforces.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { sql } from 'kysely';
import { type Param, prepared, type RowOf } from '../db/prepared.js';
import { type Access, type AuthUser, type Bucket, hasScope, type Scope } from '../lib/auth.js';
import { AppError, authError, forbidden } from '../lib/errors.js';
import { type Hit, MemoryCounter } from '../lib/rate-limiter.js';
import { keyAuthenticator } from '../modules/api-keys/authenticate.js';
import { looksLikeKey } from '../modules/api-keys/secret.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Who may call the route; every route under /api/v1 must say. */
    access?: Access;
    /**
     * The scope an API key needs to call the route (CONTRACT §11); without one, API keys are
     * refused (403) and only staff tokens get in.
     */
    scope?: Scope;
    /** Which rate-limit bucket the route counts in (default standard); false: not counted. */
    bucket?: Bucket | false;
  }
  interface FastifyRequest {
    user: AuthUser | null;
  }
}

/** The staff member a token names, as stored now, and whether the token was revoked. */
const staffForToken = prepared((db, p: Param<{ sub: string; jti: string }>) =>
  db
    .selectFrom('staff')
    .select(['id', 'role', 'name', 'email', 'department', 'active', 'tokens_valid_after'])
    .select((eb) =>
      eb.exists(eb.selectFrom('revoked_tokens').select(sql.lit(1).as('one')).where('jti', '=', p('jti'))).as('revoked'),
    )
    .where('id', '=', p('sub')),
);

type StaffRow = RowOf<typeof staffForToken> | undefined;

/** Tokens whose staff row is kept between changes to the store; past this, rows are read each time. */
const MAX_CACHED_TOKENS = 10_000;

/**
 * The staff row and revocation for a token, kept while the store's version (src/db/store.ts) is
 * unchanged: any write (a logout, a deactivation, a password change, or anything else) moves the
 * version and empties it, so a revoked token is refused on its next request, as without it. On a
 * store that cannot tell its version cheaply (PostgreSQL) every request reads the row.
 */
function staffRows(app: FastifyInstance) {
  const rows = new Map<string, StaffRow>();
  let readAt: string | null = null;
  return {
    /** The row as kept at the store's version now; undefined if not kept. */
    kept(sub: string, jti: string): { row: StaffRow } | undefined {
      const version = app.ctx.store.readVersion();
      if (version === null) return undefined;
      if (version !== readAt) {
        rows.clear();
        readAt = version;
        return undefined;
      }
      const key = `${sub}\u0000${jti}`;
      return rows.has(key) ? { row: rows.get(key) } : undefined;
    },
    /** The row read from the store, kept for the next request if nothing changed meanwhile. */
    async read(sub: string, jti: string): Promise<StaffRow> {
      const version = app.ctx.store.readVersion();
      const row = await app.ctx.store.first(staffForToken, { sub, jti });
      // Kept under the version read before the query: a write in between moves the version, so the
      // next request reads again.
      if (version !== null && version === readAt && rows.size < MAX_CACHED_TOKENS) rows.set(`${sub}\u0000${jti}`, row);
      return row;
    },
  };
}

type StaffRows = ReturnType<typeof staffRows>;

const BEARER = /^Bearer +([A-Za-z0-9_\-.=]+) *$/i;

/** The bearer credential of an Authorization header (a JWT or an API key); throws when absent. */
function bearerOf(header: string | undefined): string {
  if (header === undefined || header === '') {
    throw authError('TOKEN_MISSING', 'The Authorization header is required: Bearer <token>', false);
  }
  const m = BEARER.exec(header);
  if (m === null) throw authError('TOKEN_INVALID', 'The Authorization header must be "Bearer <token>"', true);
  return m[1]!;
}

/** The verified claims of a bearer JWT; throws when refused. */
function claimsOf(app: FastifyInstance, token: string) {
  const result = app.ctx.tokens.verify(token);
  if (!result.ok) {
    throw authError(result.reason === 'expired' ? 'TOKEN_EXPIRED' : 'TOKEN_INVALID', result.message, true);
  }
  return result.claims;
}

type KeyAuthenticator = ReturnType<typeof keyAuthenticator>;

/** The caller, at once when the token's staff row is kept, else a promise; throws when refused. */
function authenticate(
  app: FastifyInstance,
  request: FastifyRequest,
  staff: StaffRows,
  keys: KeyAuthenticator,
): AuthUser | Promise<AuthUser> {
  const credential = bearerOf(request.headers.authorization);
  if (looksLikeKey(credential)) return keys(credential);
  const { sub, jti, iat, exp } = claimsOf(app, credential);
  // One round trip (or none while the store is unchanged): the staff member as stored now, and
  // whether this token was revoked.
  const kept = staff.kept(sub, jti);
  if (kept !== undefined) return admit(kept.row, jti, iat, exp);
  return staff.read(sub, jti).then((row) => admit(row, jti, iat, exp));
}

function admit(row: StaffRow, jti: string, iat: number, exp: number): AuthUser {
  if (row === undefined) throw authError('TOKEN_INVALID', 'The token subject does not exist', true);
  if (row.revoked) throw authError('TOKEN_INVALID', 'The token has been revoked', true);
  if (iat < Number(row.tokens_valid_after)) {
    throw authError('TOKEN_INVALID', 'The token was issued before a password change; log in again', true);
  }
  if (!row.active) throw authError('UNAUTHORIZED', 'This account is deactivated', true);
  return {
    kind: 'staff',
    id: row.id,
    role: row.role,
    name: row.name,
    email: row.email,
    department: row.department,
    jti,
    exp,
    iat,
  };
}

/** The X-RateLimit-* headers for a request counted as `hit` in a bucket of `limit`. */
function limitHeaders(limit: number, hit: Hit): Record<string, number> {
  return {
    'x-ratelimit-limit': limit,
    'x-ratelimit-remaining': Math.max(0, limit - hit.count),
    'x-ratelimit-reset': Math.ceil(hit.resetAtMs / 1000),
  };
}

/**
 * Counts the request in its bucket (by staff id once authenticated, else by IP), sets the
 * X-RateLimit-* headers and throws RATE_LIMITED past the limit. The gate calls it for every
 * routed request; the framework-error handler calls it for requests that never reach a route.
 */
export async function countRequest(
  app: FastifyInstance,
  request: FastifyRequest,
  reply: FastifyReply,
  bucket: Bucket,
): Promise<void> {
  await count(app, request, reply, bucket);
}

/** countRequest, done at once when the counters are in process (no Redis). */
function count(
  app: FastifyInstance,
  request: FastifyRequest,
  reply: FastifyReply,
  bucket: Bucket,
): void | Promise<void> {
  const { counter } = app.ctx;
  // A request the router never matched (a malformed URL) has no `user` decoration at all.
  const user = request.user ?? null;
  const caller = user === null ? `ip:${request.ip}` : `${user.kind === 'api_key' ? 'key' : 'stf'}:${user.id}`;
  const { limit, windowMs, key } = bucketOf(app, bucket, caller);
  if (counter instanceof MemoryCounter) return limitTo(reply, limit, counter.hitSync(key, windowMs, Date.now()));
  return counter.hit(key, windowMs).then((hit) => limitTo(reply, limit, hit));
}

/**
 * A bucket's limit and window, and the counter key of a caller (`stf:<id>`, `key:<id>` or
 * `ip:<address>`) in it: an API key counts on its own, apart from the admin who made it.
 */
function bucketOf(app: FastifyInstance, bucket: Bucket, caller: string) {
  const { config } = app.ctx;
  return {
    limit:
      bucket === 'bulk'
        ? config.rateLimitBulk
        : bucket === 'channels'
          ? config.rateLimitChannels
          : config.rateLimitStandard,
    windowMs: config.rateLimitWindowSeconds * 1000,
    key: `${bucket}:${caller}`,
  };
}

function limitTo(reply: FastifyReply, limit: number, hit: Hit): void {
  reply.headers(limitHeaders(limit, hit));
  if (hit.count > limit) {
    const retry = Math.max(1, Math.ceil((hit.resetAtMs - Date.now()) / 1000));
    throw new AppError('RATE_LIMITED', `Too many requests; retry in ${retry} s`, undefined, {
      'retry-after': String(retry),
    });
  }
}

/** Why an API key holding `held` may not call a route needing `needed`, or undefined if it may. */
function scopeRefusal(needed: Scope | undefined, held: readonly Scope[]): AppError | undefined {
  if (needed === undefined) {
    return new AppError('FORBIDDEN', 'API keys may not call this operation; it takes a staff token');
  }
  if (hasScope(held, needed)) return undefined;
  return new AppError('FORBIDDEN', `This API key lacks the scope ${needed}`, { requiredScope: needed });
}

export default fp(
  async function gate(app: FastifyInstance) {
    app.decorateRequest('user', null);
    const staff = staffRows(app);
    const keys = keyAuthenticator(app);

    app.addHook('onRoute', (route) => {
      if (route.url.startsWith('/api/v1') && route.config?.access === undefined) {
        throw new Error(`Route ${route.method} ${route.url} does not declare config.access`);
      }
    });

    // A callback hook, not an async one: with the staff row kept and the counters in process,
    // a request passes the gate without a promise or a turn of the event loop.
    app.addHook('onRequest', (request, reply, done) => {
      const cfg = request.routeOptions.config;
      const access = cfg.access ?? 'public';
      const bucket = cfg.bucket ?? 'standard';
      // Whether the request may go on, once authenticated (or refused) and counted.
      const verdict = (failure: unknown): Error | undefined => {
        if (failure !== null) return failure as Error;
        if (access === 'public') return undefined;
        const user = request.user!;
        if (user.kind === 'api_key') return scopeRefusal(cfg.scope, user.scopes ?? []);
        if (!access.includes(user.role)) return forbidden();
        return undefined;
      };
      // A request that fails authentication (a bad token, or the store not answering: 503) is
      // still counted, so every response carries the X-RateLimit-* headers.
      const counted = (failure: unknown) => {
        let pending: void | Promise<void>;
        try {
          pending = bucket === false ? undefined : count(app, request, reply, bucket);
        } catch (limited) {
          return done(limited as Error);
        }
        if (pending instanceof Promise) pending.then(() => done(verdict(failure)), done);
        else done(verdict(failure));
      };
      if (access === 'public') return counted(null);
      let user: AuthUser | Promise<AuthUser>;
      try {
        user = authenticate(app, request, staff, keys);
      } catch (err) {
        return counted(err);
      }
      if (user instanceof Promise) {
        user.then((u) => {
          request.user = u;
          counted(null);
        }, counted);
      } else {
        request.user = user;
        counted(null);
      }
    });
  },
  { name: 'gate', dependencies: ['errors'] },
);
