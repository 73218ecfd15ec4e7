// Owns the one hook every request passes: authenticate the bearer token or API key, count the
// request in its rate-limit bucket (keyed by staff id or API key id, else IP), set the
// X-RateLimit-* headers, then enforce what the route declared: the roles in `config.access` for a
// staff token, the scope in `config.scope` for an API key. Routes declare; this file enforces. A
// credential is read from the Authorization header only (a token in a URL would reach logs and
// histories), except that a route declaring `config.ticket` also takes a one-use stream ticket in
// `?ticket=` when no header is sent: its caller is admitted as the gate would admit the token or key
// that made it, as it stands now.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { sql } from 'kysely';
import { type Param, prepared, type RowOf } from '../db/prepared.js';
import type { Store } from '../db/store.js';
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
     * The scope an API key needs to call the route (docs/integrations.md, API keys); without one, API keys are
     * refused (403) and only staff tokens get in. Several: any one of them lets the key in.
     */
    scope?: Scope | readonly Scope[];
    /** Which rate-limit bucket the route counts in (default standard); false: not counted. */
    bucket?: Bucket | false;
    /**
     * The route also takes a stream ticket (src/modules/events/tickets.ts) in `?ticket=` instead of
     * an Authorization header: GET /events/stream, for browsers' EventSource.
     */
    ticket?: boolean;
  }
  interface FastifyRequest {
    user: AuthUser | null;
    /**
     * The store's data version as the gate read it for this request (SQLite, staff tokens), null
     * when it read none: the list page cache (src/lib/pages.ts) takes it rather than reading it
     * again. A page answered at it is the data as it stood during this request.
     */
    storeVersion: string | null;
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
 * Rows are read again at least this often: had a generation move been lost (Redis failing just
 * after a commit), a change still reaches every instance within this.
 */
const MAX_KEPT_MS = 5_000;

/**
 * The staff row and revocation for a token, kept while a version is unchanged, so a revoked token
 * is refused on its next request, as without it. The version is the store's own on SQLite (any
 * write, a logout, a deactivation, a password change or anything else, moves it); on PostgreSQL
 * it is the generation the Redis rate-limit count reads in its round trip, moved by every write
 * of a staff row or a revocation (see bumpGeneration). Null: nothing can be kept (PostgreSQL
 * without Redis, Redis failing, a transaction open on SQLite's connection).
 */
function staffRows() {
  const rows = new Map<string, StaffRow>();
  let readAt: string | null = null;
  let since = 0;
  return {
    /** The row as kept at `version`; undefined if not kept. */
    kept(sub: string, jti: string, version: string | null): { row: StaffRow } | undefined {
      if (version === null) return undefined;
      const now = Date.now();
      if (version !== readAt || now - since > MAX_KEPT_MS) {
        rows.clear();
        readAt = version;
        since = now;
        return undefined;
      }
      const key = `${sub}\u0000${jti}`;
      return rows.has(key) ? { row: rows.get(key) } : undefined;
    },
    /**
     * The row read from the store, kept for the next request at `version`, read before the query:
     * a write in between moves the version, so the next request reads again.
     */
    async read(store: Store, sub: string, jti: string, version: string | null): Promise<StaffRow> {
      const row = await store.first(staffForToken, { sub, jti });
      if (version !== null && version === readAt && rows.size < MAX_CACHED_TOKENS) rows.set(`${sub}\u0000${jti}`, row);
      return row;
    },
  };
}

type StaffRows = ReturnType<typeof staffRows>;

const BEARER = /^Bearer +([A-Za-z0-9_\-.=]+) *$/i;

/** The bearer credential of an Authorization header (a JWT or an API key); throws when absent. */
export function bearerOf(header: string | undefined): string {
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

/** The stream ticket of a request (to a route that takes one) sent without an Authorization header. */
function ticketOf(request: FastifyRequest): string | undefined {
  if (request.headers.authorization !== undefined) return undefined;
  const ticket = (request.query as Record<string, unknown> | undefined)?.ticket;
  if (ticket === undefined) return undefined;
  if (typeof ticket !== 'string') throw authError('TOKEN_INVALID', 'Send one stream ticket, not several', true);
  return ticket;
}

/** The caller a stream ticket admits: its maker, if their token or key still admits them. */
async function byTicket(app: FastifyInstance, ticket: string, keys: KeyAuthenticator): Promise<AuthUser> {
  const grant = await app.eventsRuntime.tickets.redeem(ticket);
  if (grant.kind === 'api_key') return keys.byStoredHash(grant.id, grant.secretHash);
  const row = await app.ctx.store.first(staffForToken, { sub: grant.id, jti: grant.jti });
  return admit(row, grant.jti, grant.iat, grant.exp);
}

/**
 * The caller, at once when the token's staff row is kept, else a promise; throws when refused.
 * With `countFirst` (PostgreSQL + Redis) a staff token is counted before its row is looked up,
 * and the count's answer carries the generation the kept rows are checked against. With
 * `takesTicket` (the route declares `config.ticket`) a stream ticket stands in for a missing header.
 */
function authenticate(
  app: FastifyInstance,
  request: FastifyRequest,
  staff: StaffRows,
  keys: KeyAuthenticator,
  countFirst: ((caller: string) => Hit | Promise<Hit>) | null,
  takesTicket: boolean,
): AuthUser | Promise<AuthUser> {
  const ticket = takesTicket ? ticketOf(request) : undefined;
  if (ticket !== undefined) return byTicket(app, ticket, keys);
  const credential = bearerOf(request.headers.authorization);
  if (looksLikeKey(credential)) return keys.byCredential(credential);
  const { sub, jti, iat, exp } = claimsOf(app, credential);
  const { store } = app.ctx;
  // One round trip (or none while the version is unchanged): the staff member as stored now, and
  // whether this token was revoked.
  const lookUp = (version: string | null): AuthUser | Promise<AuthUser> => {
    const kept = staff.kept(sub, jti, version);
    if (kept !== undefined) return admit(kept.row, jti, iat, exp);
    return staff.read(store, sub, jti, version).then((row) => admit(row, jti, iat, exp));
  };
  if (countFirst === null) {
    const version = store.readVersion();
    request.storeVersion = version;
    return lookUp(version);
  }
  return Promise.resolve(countFirst(`stf:${sub}`)).then((hit) =>
    lookUp(hit.generation === undefined ? null : `g:${hit.generation}`),
  );
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

/** Whether authentication refused the credential itself (401), rather than failing to answer. */
const refused = (failure: unknown): boolean => failure instanceof AppError && failure.statusCode === 401;

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
  // A request the router never matched (a malformed URL) has no `user` decoration at all.
  const user = request.user ?? null;
  const caller = user === null ? `ip:${request.ip}` : `${user.kind === 'api_key' ? 'key' : 'stf'}:${user.id}`;
  const hit = countAs(app, reply, bucket, caller);
  if (hit instanceof Promise) return hit.then(() => undefined);
}

/** Counts a request of `caller` in its bucket and sets the headers; throws RATE_LIMITED past the limit. */
function countAs(app: FastifyInstance, reply: FastifyReply, bucket: Bucket, caller: string): Hit | Promise<Hit> {
  const { counter } = app.ctx;
  const { limit, windowMs, key } = bucketOf(app, bucket, caller);
  const limited = (hit: Hit) => {
    limitTo(reply, limit, hit);
    return hit;
  };
  if (counter instanceof MemoryCounter) return limited(counter.hitSync(key, windowMs, Date.now()));
  return counter.hit(key, windowMs).then(limited);
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
function scopeRefusal(needed: Scope | readonly Scope[] | undefined, held: readonly Scope[]): AppError | undefined {
  if (needed === undefined) {
    return new AppError('FORBIDDEN', 'API keys may not call this operation; it takes a staff token');
  }
  if (typeof needed !== 'string') {
    if (needed.some((n) => hasScope(held, n))) return undefined;
    return new AppError('FORBIDDEN', `This API key lacks the scope ${needed.join(' or ')}`, {
      requiredScope: needed[0],
    });
  }
  if (hasScope(held, needed)) return undefined;
  return new AppError('FORBIDDEN', `This API key lacks the scope ${needed}`, { requiredScope: needed });
}

export default fp(
  async function gate(app: FastifyInstance) {
    app.decorateRequest('user', null);
    app.decorateRequest('storeVersion', null);
    const staff = staffRows();
    // PostgreSQL cannot tell its version without a round trip; with Redis counting every request
    // anyway, that round trip brings a generation instead (see staffRows).
    const generational = app.ctx.store.dialect === 'postgres' && app.ctx.redis !== null;
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
      // The staff member a token was counted as before its row was looked up, if it was.
      let countedFirst: string | null = null;
      const countFirst =
        generational && bucket !== false
          ? (caller: string) => {
              countedFirst = caller;
              return countAs(app, reply, bucket, caller);
            }
          : null;
      // A request that fails authentication (a bad token, or the store not answering: 503) is
      // still counted, so every response carries the X-RateLimit-* headers.
      const counted = (failure: unknown) => {
        if (countedFirst !== null && !refused(failure)) return done(verdict(failure));
        let pending: void | Promise<void>;
        try {
          // A token its row refuses (revoked, its member deactivated or gone) was counted as that
          // member: the hit is taken back and counted by IP, as any other refused token is, so a
          // logged-out token cannot spend its former owner's budget.
          if (countedFirst !== null && bucket !== false) {
            app.ctx.counter.refund(bucketOf(app, bucket, countedFirst).key).catch(() => {});
          }
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
        user = authenticate(app, request, staff, keys, countFirst, cfg.ticket === true);
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
