// Owns the read cache: a list route that declares `config.cache` answers a request it answered
// before with the same bytes, as long as nothing in the store has changed since. "Changed" is the
// store's version (src/db/store.ts), which moves on every write by this process and every commit
// by another, so a cached page is never stale: it is exactly what the query would return now.
// Integrations poll the same list all day; between changes each poll then costs no query.
// Only SQLite can tell its version cheaply; on PostgreSQL nothing is cached. Keyed by the caller
// (what a list shows depends on who asks) and the URL as sent. `Cache-Control: no-cache` on a
// request skips the cache for it.
//
// A kept page is answered in the route's preHandler, after the gate has authenticated, admitted
// and counted the request: it passes every hook a fresh read passes and only skips the handler,
// so its headers are the full path's by construction (test/plugins/read-cache.test.ts compares them).
import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import fp from 'fastify-plugin';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Answer repeated requests from the read cache while the store is unchanged. */
    cache?: boolean;
  }
  interface FastifyInstance {
    /** What the read cache covers and how often it answered (tests and diagnostics). */
    readCache: { readonly routes: string[]; readonly hits: number };
  }
}

/** A kept answer, as bytes: a string body would be encoded to UTF-8 again on every answer. */
interface Entry {
  body: Buffer;
}

/** Bounds: entries kept, bytes kept, and the largest response kept. */
const MAX_ENTRIES = 1000;
const MAX_BYTES = 16 * 1024 * 1024;
const MAX_ENTRY_BYTES = 256 * 1024;
const JSON_TYPE = 'application/json; charset=utf-8';
const NO_CACHE = /no-cache|no-store/i;

type OnSendDone = (err: Error | null, payload?: unknown) => void;

function asList<T>(hooks: T | T[] | undefined): T[] {
  if (hooks === undefined) return [];
  return Array.isArray(hooks) ? hooks : [hooks];
}

export default fp(
  async function readCache(app: FastifyInstance) {
    // Kept as bytes: a string body would be encoded to UTF-8 again on every answer.
    const entries = new Map<string, Entry>();
    let bytes = 0;
    let version: string | null = null;
    /** Requests that missed: where their response goes, and the version it was read at. */
    const misses = new WeakMap<FastifyRequest, { key: string; version: string }>();
    const stats = { routes: [] as string[], hits: 0 };
    app.decorate('readCache', stats);

    const forget = (key: string) => {
      const old = entries.get(key);
      if (old !== undefined) {
        bytes -= old.body.length;
        entries.delete(key);
      }
    };

    /** The entry for a caller and URL at the store's version `now`; every entry goes when it moved. */
    const find = (userId: string, url: string, now: string): Entry | undefined => {
      if (now !== version) {
        // Something changed: every entry is stale.
        entries.clear();
        bytes = 0;
        version = now;
        return undefined;
      }
      const key = `${userId}\u0000${url}`;
      const hit = entries.get(key);
      if (hit !== undefined) {
        // Most recently used last, so the first key is the one to evict.
        entries.delete(key);
        entries.set(key, hit);
      }
      return hit;
    };

    // Callback hooks, on the routes that declare `config.cache` only: other routes pay nothing.
    const lookup = (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => {
      if (NO_CACHE.test(request.headers['cache-control'] ?? '')) return done();
      // The version the gate read admitting this request (the store as it was after the request
      // arrived, a moment ago in the same synchronous run), else read now.
      const now = request.storeVersion ?? app.ctx.store.readVersion();
      if (now === null) return done();
      const userId = request.user?.id ?? '';
      const hit = find(userId, request.url, now);
      if (hit === undefined) {
        misses.set(request, { key: `${userId}\u0000${request.url}`, version: now });
        return done();
      }
      // Answered here: the handler does not run (a callback hook that sends does not call done).
      stats.hits++;
      reply.type(JSON_TYPE).send(hit.body);
    };

    const keep = (request: FastifyRequest, reply: FastifyReply, payload: unknown, done: OnSendDone) => {
      const miss = misses.get(request);
      // Kept only if read at the version still current: a write since then made it stale.
      if (miss !== undefined && reply.statusCode === 200 && typeof payload === 'string' && miss.version === version) {
        const body = Buffer.from(payload);
        if (body.length <= MAX_ENTRY_BYTES) {
          forget(miss.key);
          entries.set(miss.key, { body });
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
      stats.routes.push(`${route.method} ${route.url}`);
      route.preHandler = [...asList(route.preHandler), lookup] as typeof route.preHandler;
      route.onSend = [...asList(route.onSend), keep] as typeof route.onSend;
    });
  },
  { name: 'read-cache', dependencies: ['gate'] },
);
