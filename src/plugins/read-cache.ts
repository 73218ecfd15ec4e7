// Owns the read cache: a list route that declares `config.cache` answers a request it answered
// before with the same bytes, as long as nothing in the store has changed since. "Changed" is the
// store's version (src/db/store.ts), which moves on every write by this process and every commit
// by another, so a cached page is never stale: it is exactly what the query would return now.
// Integrations poll the same list all day; between changes each poll then costs no query.
// Only SQLite can tell its version cheaply; on PostgreSQL nothing is cached. Keyed by the caller
// (what a list shows depends on who asks) and the URL as sent. `Cache-Control: no-cache` on a
// request skips the cache for it.
//
// A cached page is answered before routing when it can be at once (`answer`, called by the HTTP
// server in app.ts): the gate identifies the caller from kept state and counts the request, and
// the bytes go out with the headers the full path would send. Anything else (no kept staff row,
// Redis counters, a request over its limit, a refused token) takes the full path, which answers
// it exactly as before. Fastify's routing, hooks and reply were ~half of a cached page's cost.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import fp from 'fastify-plugin';
import { requestId } from '../lib/request-id.js';
import type { Access, Bucket } from './gate.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Answer repeated requests from the read cache while the store is unchanged. */
    cache?: boolean;
  }
  interface FastifyInstance {
    readCache: {
      /**
       * Answers a request from the cache before routing and returns true, or returns false and
       * leaves the request untouched for Fastify.
       */
      answer(req: IncomingMessage, res: ServerResponse): boolean;
    };
  }
}

/** A kept answer, with what its route declared, so an answer before routing applies it too. */
interface Entry {
  body: Buffer;
  access: Access;
  bucket: Bucket | false;
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
      reply.type(JSON_TYPE).send(hit.body);
    };

    const keep = (request: FastifyRequest, reply: FastifyReply, payload: unknown, done: OnSendDone) => {
      const miss = misses.get(request);
      // Kept only if read at the version still current: a write since then made it stale.
      if (miss !== undefined && reply.statusCode === 200 && typeof payload === 'string' && miss.version === version) {
        const body = Buffer.from(payload);
        if (body.length <= MAX_ENTRY_BYTES) {
          const { access = 'public', bucket = 'standard' } = request.routeOptions.config;
          forget(miss.key);
          entries.set(miss.key, { body, access, bucket });
          bytes += body.length;
          while (entries.size > MAX_ENTRIES || bytes > MAX_BYTES) {
            forget(entries.keys().next().value as string);
          }
        }
      }
      done(null, payload);
    };

    // Before routing: only what is answered the same as on the full path. Not while the server
    // drains (the full path answers 503 then), nor for a request with a body or a no-cache one.
    let draining = false;
    app.addHook('preClose', (done) => {
      draining = true;
      done();
    });
    const { trustProxy } = app.ctx.config;
    const answer = (req: IncomingMessage, res: ServerResponse): boolean => {
      if (draining || req.method !== 'GET' || version === null) return false;
      const h = req.headers;
      if (h['content-length'] !== undefined || h['transfer-encoding'] !== undefined) return false;
      if (h['cache-control'] !== undefined && NO_CACHE.test(h['cache-control'])) return false;
      const url = req.url ?? '';
      const caller = app.gate.identify(h.authorization);
      if (caller === undefined) return false;
      const hit = find(caller.user.id, url, caller.version);
      if (hit === undefined || (hit.access !== 'public' && !hit.access.includes(caller.user.role))) return false;
      // The request-logging lines Fastify writes at info; behind a proxy its client address and
      // host come from forwarded headers, which only the full path reads.
      const logInfo = (app.log as { isLevelEnabled?(level: string): boolean }).isLevelEnabled?.('info') !== false;
      if (logInfo && trustProxy) return false;
      const limits = app.gate.countAtOnce(caller.user, hit.bucket);
      if (limits === undefined) return false;
      const id = requestId(req);
      if (logInfo) logRequest(app, req, res, id);
      res.writeHead(200, {
        'x-request-id': id,
        ...limits,
        'content-type': JSON_TYPE,
        'content-length': hit.body.length,
      });
      res.end(hit.body);
      return true;
    };
    app.decorate('readCache', { answer });

    app.addHook('onRoute', (route) => {
      if (route.config?.cache !== true) return;
      route.preHandler = [...asList(route.preHandler), lookup] as typeof route.preHandler;
      route.onSend = [...asList(route.onSend), keep] as typeof route.onSend;
    });
  },
  { name: 'read-cache', dependencies: ['gate'] },
);

/** Logs a request answered before routing with the lines, fields and reqId Fastify would write. */
function logRequest(app: FastifyInstance, req: IncomingMessage, res: ServerResponse, reqId: string): void {
  const started = performance.now();
  const log = app.log.child({ reqId });
  // Shaped like Fastify's request for its `req` serializer.
  const { method, url, headers, socket } = req;
  log.info({ req: { method, url, headers, host: headers.host, ip: socket.remoteAddress, socket } }, 'incoming request');
  res.once('finish', () => {
    log.info({ res: { statusCode: res.statusCode }, responseTime: performance.now() - started }, 'request completed');
  });
}
