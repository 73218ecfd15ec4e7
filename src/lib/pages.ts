// Owns how a list request asks for a page and how its answer says where the next one is
// (docs/decisions.md, Requests and responses): `page` or `cursor` (never both), `meta` with `nextCursor`, and a `Link: rel="next"`
// header. A cursor is opaque to clients: the last row's order values, signed with an HMAC keyed
// from JWT_SECRET over them and the list's scope (its name, path and filters), so a forged,
// truncated or re-filtered cursor is a VALIDATION_ERROR (never an SQL error) and a cursor stays valid across restarts and
// instances that share the secret (and through a rotation, while the old secret is in
// JWT_SECRET_PREVIOUS).
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { PageRequest, PageResult } from '../db/paginate.js';
import { fieldError, validation } from './errors.js';
import type { KeptPage, PageCache } from './page-cache.js';
import type { ListMeta } from './schemas.js';

type Key = [string | number, string];

const MAC_BYTES = 16;

export class CursorCodec {
  private readonly keys: Buffer[];

  /** `secrets`: the current JWT secret first, then the previous ones (verify only). */
  constructor(secrets: readonly string[]) {
    this.keys = secrets.map((s) => createHmac('sha256', s).update('gma list cursor v1').digest());
  }

  encode(scope: string, key: Key): string {
    const body = Buffer.from(JSON.stringify(key)).toString('base64url');
    return `${body}.${this.mac(this.keys[0]!, scope, body)}`;
  }

  /** The key a cursor carries, if it was made by this service for `scope`; else undefined. */
  decode(scope: string, cursor: string): Key | undefined {
    const dot = cursor.indexOf('.');
    if (dot <= 0) return undefined;
    const body = cursor.slice(0, dot);
    const mac = Buffer.from(cursor.slice(dot + 1), 'base64url');
    if (mac.length !== MAC_BYTES) return undefined;
    // The scope is signed, not carried: a cursor of another list or other filters fails here.
    const signed = this.keys.some((k) => timingSafeEqual(Buffer.from(this.mac(k, scope, body), 'base64url'), mac));
    if (!signed) return undefined;
    let parsed: unknown;
    try {
      parsed = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
    } catch {
      return undefined;
    }
    if (!Array.isArray(parsed) || parsed.length !== 2) return undefined;
    const [k0, k1] = parsed as unknown[];
    if ((typeof k0 !== 'string' && typeof k0 !== 'number') || typeof k1 !== 'string') return undefined;
    return [k0, k1];
  }

  private mac(key: Buffer, scope: string, body: string): string {
    return createHmac('sha256', key).update(`${scope}\n${body}`).digest().subarray(0, MAC_BYTES).toString('base64url');
  }
}

/** The query parameters that choose a page rather than filter the list. */
const PAGING = new Set(['page', 'limit', 'cursor']);

/** Scopes worked out, by list and URL: a list's first page is asked for with the same URL again and again. */
const scopes = new Map<string, string>();
const MAX_SCOPES = 1000;
/** Longer URLs (long searches) are worked out each time, so the kept ones stay small. */
const MAX_KEPT_URL = 512;

/**
 * What a cursor is bound to: the list, its path parameters and every filter in the query, so a
 * cursor used on another list or with other filters is refused. The same URL of the same list
 * always has the same scope (its parameters and query are parsed from it), so it is kept by URL.
 */
function scopeOf(list: string, request: FastifyRequest): string {
  if (request.url.length > MAX_KEPT_URL) return scopeOfQuery(list, request);
  const key = `${list}\n${request.url}`;
  let scope = scopes.get(key);
  if (scope === undefined) {
    scope = scopeOfQuery(list, request);
    if (scopes.size >= MAX_SCOPES) scopes.clear();
    scopes.set(key, scope);
  }
  return scope;
}

function scopeOfQuery(list: string, request: FastifyRequest): string {
  const query = Object.entries((request.query ?? {}) as Record<string, unknown>)
    .filter(([k, v]) => !PAGING.has(k) && v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const digest = createHash('sha256')
    .update(JSON.stringify([request.params ?? {}, query]))
    .digest('base64url')
    .slice(0, 16);
  return `${list}:${digest}`;
}

interface PagingQuery {
  page?: number;
  limit?: number;
  cursor?: string;
}

/** The page a list request asks for; a bad cursor, or `page` with `cursor`, is a VALIDATION_ERROR. */
function pageRequest(request: FastifyRequest, list: string, cursors: CursorCodec, ranked: boolean): PageRequest {
  const { page, limit = 20, cursor } = request.query as PagingQuery;
  if (cursor === undefined) return { page: page ?? 1, limit };
  if (ranked) throw fieldError('cursor', 'is not offered for ranked search results: ask for them by page');
  if (page !== undefined) {
    throw validation(
      [
        { field: 'page', message: 'must not be given with cursor' },
        { field: 'cursor', message: 'must not be given with page' },
      ],
      'Ask for a page by number or by cursor, not both',
    );
  }
  const after = cursors.decode(scopeOf(list, request), cursor);
  if (after === undefined) {
    throw fieldError('cursor', 'is not a cursor this list gave for these filters (use meta.nextCursor as it is)');
  }
  return { after, limit };
}

/**
 * Answers a list request: the page it asks for (`read` runs the list's `paginate`), its items as
 * `toView` shows them, `meta`, and a `Link: rel="next"` header when another page follows.
 */
export async function listPage<R, T>(
  request: FastifyRequest,
  reply: FastifyReply,
  list: string,
  read: (req: PageRequest) => Promise<PageResult<R>>,
  toView: (row: R) => T,
  options: { ranked?: boolean } = {},
): Promise<{ success: true; data: T[]; meta: ListMeta }> {
  const { cursors } = request.server.ctx;
  const req = pageRequest(request, list, cursors, options.ranked === true);
  return pageReply(request, reply, list, cursors, req, await read(req), toView);
}

/**
 * How listPageJson keeps a list's pages (src/lib/page-cache.ts): `key` names everything the page
 * depends on besides the store's data and the time (the list, its filters as the caller may see
 * them, `page`, `limit`, `cursor`), and `until` gives the first moment (epoch ms) from which its
 * rows could read differently by time alone.
 */
export interface PageCaching<R> {
  cache: PageCache;
  key: string;
  until(rows: R[]): number | Promise<number>;
  /**
   * A setting the page's read needs (a key): where the store reads it with its data version in one
   * round trip (Store.dataVersionWithSetting), its stored text is handed to `read`.
   */
  setting?: string;
}

/**
 * listPage for a list whose store writes each row's JSON (`jsonOf` reads it off the row): the answer
 * is those texts joined in the envelope, with no object built or serialized per row. What it sends
 * is what listPage would (the route's schema still documents it; the tests check every answer
 * against it). With `caching`, a page read at the store's current data version is answered again
 * from the cache (its key asked before at that version: see PageCache).
 */
export async function listPageJson<R>(
  request: FastifyRequest,
  reply: FastifyReply,
  list: string,
  read: (req: PageRequest, setting?: { text: string | null }) => Promise<PageResult<R>>,
  jsonOf: (row: R) => string,
  caching?: PageCaching<R>,
): Promise<FastifyReply> {
  const { cursors, store } = request.server.ctx;
  let version: string | null = null;
  let admitted = false;
  let setting: { text: string | null } | undefined;
  if (caching !== undefined) {
    // The version the gate read for this request, if any (SQLite): the same store's, one read fewer.
    if (request.storeVersion === null && caching.setting !== undefined && store.dataVersionWithSetting) {
      const both = await store.dataVersionWithSetting(caching.setting);
      version = both?.version ?? null;
      if (both !== null) setting = { text: both.setting };
    } else {
      const v = request.storeVersion ?? store.dataVersion();
      version = typeof v === 'string' || v === null ? v : await v;
    }
    if (version !== null) {
      // The key holds the cursor and page as sent: a kept page's request was checked when it was read.
      const kept = caching.cache.get(caching.key, version, Date.now());
      if (kept !== undefined) return sendPage(request, reply, kept);
      admitted = caching.cache.missAdmits(caching.key, version);
    }
  }
  const req = pageRequest(request, list, cursors, false);
  const result = await read(req, setting);
  const meta = metaOf(request, list, cursors, req, result);
  let data = '';
  for (let i = 0; i < result.rows.length; i++)
    data += i === 0 ? jsonOf(result.rows[i]!) : `,${jsonOf(result.rows[i]!)}`;
  const page: KeptPage = {
    body: `{"success":true,"data":[${data}],"meta":${JSON.stringify(meta)}}`,
    nextCursor: meta.nextCursor,
  };
  if (admitted) {
    const until = await caching!.until(result.rows);
    // Kept only if nothing committed while it was read: then it is the data at `version`.
    if ((await store.dataVersion()) === version) caching!.cache.put(caching!.key, version!, page, until);
  }
  return sendPage(request, reply, page);
}

function sendPage(request: FastifyRequest, reply: FastifyReply, page: KeptPage): FastifyReply {
  if (page.nextCursor !== null) reply.header('link', `<${nextUrl(request.url, page.nextCursor)}>; rel="next"`);
  reply.type('application/json; charset=utf-8');
  return reply.send(page.body as never);
}

/** The page's `meta`, with the `Link` header when another page follows. */
function pageMeta<R>(
  request: FastifyRequest,
  reply: FastifyReply,
  list: string,
  cursors: CursorCodec,
  req: PageRequest,
  result: PageResult<R>,
): ListMeta {
  const meta = metaOf(request, list, cursors, req, result);
  if (meta.nextCursor !== null) reply.header('link', `<${nextUrl(request.url, meta.nextCursor)}>; rel="next"`);
  return meta;
}

/** The page's `meta`. */
function metaOf<R>(
  request: FastifyRequest,
  list: string,
  cursors: CursorCodec,
  req: PageRequest,
  result: PageResult<R>,
): ListMeta {
  const nextCursor = result.next === null ? null : cursors.encode(scopeOf(list, request), result.next);
  if ('after' in req || result.total === null) return { limit: req.limit, nextCursor };
  const { page, limit } = req;
  const total = result.total;
  return { page, limit, total, pages: Math.ceil(total / limit), nextCursor };
}

function pageReply<R, T>(
  request: FastifyRequest,
  reply: FastifyReply,
  list: string,
  cursors: CursorCodec,
  req: PageRequest,
  result: PageResult<R>,
  toView: (row: R) => T,
): { success: true; data: T[]; meta: ListMeta } {
  const meta = pageMeta(request, reply, list, cursors, req, result);
  return { success: true, data: result.rows.map(toView), meta };
}

/** The request's own URL with `cursor` set to the next one and `page` dropped. */
function nextUrl(url: string, cursor: string): string {
  const q = url.indexOf('?');
  const params = new URLSearchParams(q < 0 ? '' : url.slice(q + 1));
  params.delete('page');
  params.set('cursor', cursor);
  return `${q < 0 ? url : url.slice(0, q)}?${params.toString()}`;
}
