// Owns the read cache: a list route that declares `config.cache` answers a request it answered
// before with the same bytes, as long as nothing in the store has changed since. "Changed" is the
// store's version (src/db/store.ts), which moves on every write by this process and every commit
// by another, so a cached page is never stale: it is exactly what the query would return now.
// Integrations poll the same list all day; between changes each poll then costs no query.
// Only SQLite can tell its version cheaply; on PostgreSQL nothing is cached. Keyed by the caller
// (what a list shows depends on who asks) and the URL as sent. `Cache-Control: no-cache` on a
// request skips the cache for it.
import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import fp from 'fastify-plugin';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Answer repeated requests from the read cache while the store is unchanged. */
    cache?: boolean;
  }
}

/** Bounds: entries kept, bytes kept, and the largest response kept. */
const MAX_ENTRIES = 1000;
const MAX_BYTES = 16 * 1024 * 1024;
const MAX_ENTRY_BYTES = 256 * 1024;
const JSON_TYPE = 'application/json; charset=utf-8';

type OnSendDone = (err: Error | null, payload?: unknown) => void;

function asList<T>(hooks: T | T[] | undefined): T[] {
  if (hooks === undefined) return [];
  return Array.isArray(hooks) ? hooks : [hooks];
}

export default fp(
  async function readCache(app: FastifyInstance) {
    // Kept as bytes: a string body would be encoded to UTF-8 again on every answer.
    const entries = new Map<string, Buffer>();
    let bytes = 0;
    let version: string | null = null;
    /** Requests that missed: where their response goes, and the version it was read at. */
    const misses = new WeakMap<FastifyRequest, { key: string; version: string }>();

    const forget = (key: string) => {
      const old = entries.get(key);
      if (old !== undefined) {
        bytes -= old.length;
        entries.delete(key);
      }
    };

    // Callback hooks, on the routes that declare `config.cache` only: other routes pay nothing.
    const lookup = (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => {
      if (/no-cache|no-store/i.test(request.headers['cache-control'] ?? '')) return done();
      // The version the gate read admitting this request (the store as it was after the request
      // arrived, a moment ago in the same synchronous run), else read now.
      const now = request.storeVersion ?? app.ctx.store.readVersion();
      if (now === null) return done();
      if (now !== version) {
        // Something changed: every entry is stale.
        entries.clear();
        bytes = 0;
        version = now;
      }
      const key = `${request.user?.id ?? ''}\u0000${request.url}`;
      const hit = entries.get(key);
      if (hit === undefined) {
        misses.set(request, { key, version: now });
        return done();
      }
      // Most recently used last, so the first key is the one to evict.
      entries.delete(key);
      entries.set(key, hit);
      // Answered here: the handler does not run (a callback hook that sends does not call done).
      reply.type(JSON_TYPE).send(hit);
    };

    const keep = (request: FastifyRequest, reply: FastifyReply, payload: unknown, done: OnSendDone) => {
      const miss = misses.get(request);
      // Kept only if read at the version still current: a write since then made it stale.
      if (miss !== undefined && reply.statusCode === 200 && typeof payload === 'string' && miss.version === version) {
        const body = Buffer.from(payload);
        if (body.length <= MAX_ENTRY_BYTES) {
          forget(miss.key);
          entries.set(miss.key, body);
          bytes += body.length;
          while (entries.size > MAX_ENTRIES || bytes > MAX_BYTES) {
            forget(entries.keys().next().value as string);
          }
        }
      }
      done(null, payload);
    };

    app.addHook('onRoute', (route) => {
      if (route.config?.cache !== true) return;
      route.preHandler = [...asList(route.preHandler), lookup] as typeof route.preHandler;
      route.onSend = [...asList(route.onSend), keep] as typeof route.onSend;
    });
  },
  { name: 'read-cache', dependencies: ['gate'] },
);
