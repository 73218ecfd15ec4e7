// The typed client for the Guest Messaging and Operations API. `api` is an openapi-fetch client
// typed from the server's own OpenAPI document (src/schema.ts, generated); around it, what
// integrators would otherwise write by hand: logging in and refreshing a token, an Idempotency-Key
// on every write with retries that reuse it, walking a list by cursor, following the event feed
// from a saved cursor, and checking a webhook's signature.
import { createHmac, randomUUID, timingSafeEqual } from 'node:crypto';
import createFetchClient, { type FetchResponse, type MaybeOptionalInit } from 'openapi-fetch';
import type { HttpMethod, PathsWithMethod, RequiredKeysOf } from 'openapi-typescript-helpers';
import type { components, paths } from './schema.js';

export type { components, paths };
export type Schemas = components['schemas'];
/** What an error adds for a program: the fields a 400 found wrong, the scope a 403 lacks, … */
export type ErrorDetails = NonNullable<Schemas['Error']['error']['details']>;

/** An error answer of the API: `code` is the stable one to branch on (VALIDATION_ERROR, …). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: ErrorDetails | undefined,
    readonly requestId: string | null,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

export interface ClientOptions {
  /** Where the API is served, e.g. `https://api.hotel.example` (the paths carry `/api/v1`). */
  baseUrl: string;
  /** A token from login, or an API key (`gma_…`); both are sent as a bearer token. */
  token?: string;
  /** A fetch implementation (tests, proxies); the global one by default. */
  fetch?: typeof fetch;
  /**
   * How often a request is tried again after a network failure, 503, 429 or an idempotent write
   * still in flight (409 with Retry-After); default 2, 0 to turn retries off. A write (POST, and
   * PATCH /conversations/bulk) carries an `Idempotency-Key` (one is made unless the request has
   * its own), the same on every try, so a retry never applies it twice: the server replays the
   * first answer.
   */
  retries?: number;
}

type Json = {
  success: boolean;
  data?: unknown;
  meta?: unknown;
  error?: { code: string; message: string; details?: ErrorDetails };
};

/** Throws the API's error as an ApiError; returns `data` of a success. */
export function unwrap<T extends { data?: unknown }>(result: {
  data?: T;
  error?: unknown;
  response: Response;
}): NonNullable<T['data']> {
  if (result.data !== undefined) return result.data.data as NonNullable<T['data']>;
  const body = (result.error ?? {}) as Json;
  throw new ApiError(
    result.response.status,
    body.error?.code ?? 'UNKNOWN',
    body.error?.message ?? `HTTP ${result.response.status}`,
    body.error?.details,
    result.response.headers.get('x-request-id'),
  );
}

/** The paths whose GET answers a list page (with `meta.nextCursor`). */
export type ListPath = {
  [P in keyof paths]: paths[P] extends {
    get: {
      responses: { 200: { content: { 'application/json': { data: unknown[]; meta: { nextCursor?: unknown } } } } };
    };
  }
    ? P
    : never;
}[keyof paths];

type ListGet<P extends ListPath> = paths[P]['get'];
/** One item of a list. */
export type ItemOf<P extends ListPath> = ListGet<P>['responses'][200]['content']['application/json']['data'][number];
type ParamsOf<P extends ListPath> = ListGet<P> extends { parameters: infer Q } ? Q : never;
/** The filters of a list: its query without the paging parameters, and its path parameters. */
export type ListParams<P extends ListPath> = {
  query?: Omit<NonNullable<ParamsOf<P> extends { query?: infer Q } ? Q : never>, 'page' | 'cursor'>;
} & (ParamsOf<P> extends { path: infer A } ? { path: A } : { path?: never });

/** What a call to `path` with `method` takes: its parameters, body and fetch options. */
export type InitOf<P extends keyof paths, M extends HttpMethod> = MaybeOptionalInit<paths[P], M & keyof paths[P]>;

/**
 * One method of the client, as openapi-fetch calls it but typed from the path alone: the options
 * object is checked against the operation's own type, so a misspelt or unknown body field or query
 * parameter is a type error (openapi-fetch infers the options' type from the argument itself, which
 * lets unknown fields through).
 */
export type StrictMethod<M extends HttpMethod> = <P extends PathsWithMethod<paths, M>>(
  url: P,
  ...init: RequiredKeysOf<NonNullable<InitOf<P, M>>> extends never ? [init?: InitOf<P, M>] : [init: InitOf<P, M>]
) => Promise<
  FetchResponse<paths[P][M & keyof paths[P]] & Record<string, unknown>, InitOf<P, M>, `${string}/${string}`>
>;

/** The API's operations, by method: `api.GET('/api/v1/guests/{id}', { params: { path: { id } } })`. */
export interface StrictClient {
  GET: StrictMethod<'get'>;
  POST: StrictMethod<'post'>;
  PUT: StrictMethod<'put'>;
  PATCH: StrictMethod<'patch'>;
  DELETE: StrictMethod<'delete'>;
}

export interface GuestApi {
  /** The typed openapi-fetch client: `api.GET('/api/v1/guests/{id}', { params: { path: { id } } })`. */
  readonly api: StrictClient;
  /** Logs in with e-mail and password; later calls carry the token. */
  login(email: string, password: string): Promise<LoginResult>;
  /** Exchanges the current token for a fresh one (the old one is revoked). */
  refresh(): Promise<LoginResult>;
  /** Uses this token or API key from now on. */
  setToken(token: string | undefined): void;
  /**
   * Every item of a list, in order, page after page by cursor (the same cost at any depth).
   * `limit` is the page size (1–100).
   */
  items<P extends ListPath>(path: P, params?: ListParams<P>, limit?: number): AsyncGenerator<ItemOf<P>>;
  /**
   * Events after `after` (an event id, '0' for everything kept), oldest first, forever: polls the
   * feed every `intervalMs` when it is drained. Save `event.id` to resume after a restart.
   */
  events(options?: {
    after?: string;
    types?: string[];
    intervalMs?: number;
    signal?: AbortSignal;
  }): AsyncGenerator<Event>;
}

export type LoginResult = paths['/api/v1/auth/login']['post']['responses'][200]['content']['application/json']['data'];
export type Event = paths['/api/v1/events']['get']['responses'][200]['content']['application/json']['data'][number];

/** Whether a request changes something and so carries an Idempotency-Key (CONTRACT §11). */
const isWrite = (r: Request) => r.method === 'POST' || (r.method === 'PATCH' && r.url.endsWith('/conversations/bulk'));

/**
 * A fetch that sends each write with one Idempotency-Key and tries it again, with that key, when
 * the answer is lost or the server asks to retry.
 */
function retryingFetch(base: typeof fetch, retries: number): typeof fetch {
  return async (input, init) => {
    const request = new Request(input, init);
    const write = isWrite(request);
    if (write && !request.headers.has('idempotency-key')) request.headers.set('idempotency-key', randomUUID());
    for (let attempt = 0; ; attempt++) {
      const last = attempt >= retries;
      let res: Response;
      try {
        res = await base(request.clone());
      } catch (err) {
        // No answer: a write may or may not have been applied; the same key makes retrying safe.
        if (last || request.signal.aborted) throw err;
        await sleep(backoff(attempt), request.signal);
        continue;
      }
      const again =
        res.status === 503 || res.status === 429 || (write && res.status === 409 && res.headers.has('retry-after'));
      if (!again || last) return res;
      const after = Number(res.headers.get('retry-after'));
      await res.body?.cancel();
      await sleep(
        Number.isFinite(after) && after > 0 ? Math.min(after * 1000, 30_000) : backoff(attempt),
        request.signal,
      );
    }
  };
}

const backoff = (attempt: number) => Math.min(200 * 2 ** attempt, 5_000) * (0.5 + Math.random() / 2);

export function createGuestApi(options: ClientOptions): GuestApi {
  const api = createFetchClient<paths>({
    baseUrl: options.baseUrl,
    fetch: retryingFetch(options.fetch ?? globalThis.fetch, options.retries ?? 2),
  });
  let token = options.token;
  api.use({
    onRequest({ request }) {
      if (token !== undefined && !request.headers.has('authorization')) {
        request.headers.set('authorization', `Bearer ${token}`);
      }
      return request;
    },
  });
  // The list paths are many types; the loop below only needs GET with a query and path.
  const get = api.GET as unknown as (
    path: string,
    init: unknown,
  ) => Promise<{ data?: Json; error?: unknown; response: Response }>;

  return {
    api: api as unknown as StrictClient,
    async login(email, password) {
      const result = unwrap(await api.POST('/api/v1/auth/login', { body: { email, password } }));
      token = result.token;
      return result;
    },
    async refresh() {
      const result = unwrap(await api.POST('/api/v1/auth/refresh', {}));
      token = result.token;
      return result;
    },
    setToken(next) {
      token = next;
    },
    async *items(path, params, limit = 100) {
      let cursor: string | undefined;
      do {
        const query = { ...(params?.query ?? {}), limit, ...(cursor !== undefined && { cursor }) };
        const result = await get(path, { params: { ...params, query } });
        const page = unwrap(result as never) as unknown as unknown[];
        for (const item of page) yield item as never;
        const meta = (result.data?.meta ?? {}) as { nextCursor?: string | null };
        cursor = meta.nextCursor ?? undefined;
      } while (cursor !== undefined);
    },
    async *events({ after = '0', types, intervalMs = 2000, signal } = {}) {
      let cursor = after;
      while (!signal?.aborted) {
        const query = { after: cursor, limit: 100, ...(types && { types: types.join(',') }) };
        const result = await api.GET('/api/v1/events', { params: { query }, ...(signal && { signal }) });
        const page = unwrap(result);
        for (const event of page) yield event as Event;
        cursor = result.data?.meta.nextCursor ?? cursor;
        if (!result.data?.meta.hasMore) await sleep(intervalMs, signal);
      }
    },
  };
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

/** The headers of a webhook request that its signature covers. */
export interface WebhookHeaders {
  'webhook-id'?: string | null;
  'webhook-timestamp'?: string | null;
  'webhook-signature'?: string | null;
}

/**
 * Whether a webhook request was signed with `secret`: `v1=` + hex HMAC-SHA256 over
 * "<Webhook-Timestamp>.<raw body>", compared in constant time, with the timestamp at most
 * `toleranceSeconds` from now. Pass the raw body exactly as received, before parsing it.
 */
export function verifyWebhook(
  secret: string,
  headers: WebhookHeaders | Headers,
  rawBody: string | Uint8Array,
  toleranceSeconds = 300,
  now: number = Date.now(),
): boolean {
  const read = (name: keyof WebhookHeaders) =>
    headers instanceof Headers ? headers.get(name) : (headers[name] ?? null);
  const timestamp = read('webhook-timestamp');
  const signature = read('webhook-signature');
  if (timestamp === null || signature === null || !/^\d{1,12}$/.test(timestamp)) return false;
  if (Math.abs(now / 1000 - Number(timestamp)) > toleranceSeconds) return false;
  const body = typeof rawBody === 'string' ? Buffer.from(rawBody) : Buffer.from(rawBody);
  const expected = createHmac('sha256', secret)
    .update(Buffer.concat([Buffer.from(`${timestamp}.`), body]))
    .digest('hex');
  return signature
    .split(/\s+/)
    .filter((s) => s.startsWith('v1='))
    .some((s) => {
      const given = Buffer.from(s.slice(3), 'utf8');
      return given.length === expected.length && timingSafeEqual(given, Buffer.from(expected, 'utf8'));
    });
}
