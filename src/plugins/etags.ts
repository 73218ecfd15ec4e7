// Owns ETags (docs/integrations.md, "Concurrent edits"). Every success answer holding one record (a GET of it, a create, an
// update) carries `ETag`, a digest of the record as answered; a GET whose If-None-Match names it is
// answered 304 with no body. A PATCH, PUT or DELETE route declaring `config.current` checks
// If-Match: the record is locked (PostgreSQL: FOR UPDATE; SQLite has one writer), read as its GET
// shows it and compared in the same request transaction (src/db/request-tx.ts) the handler then
// writes in, so of two writers sending the same ETag one gets 412 PRECONDITION_FAILED.
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteHandlerMethod } from 'fastify';
import fp from 'fastify-plugin';
import { CompiledQuery } from 'kysely';
import { inRequestTx, requestTx } from '../db/request-tx.js';
import { AppError } from '../lib/errors.js';
import { type Current, etagOf, ifMatchHolds, isNotModified } from '../lib/etag.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** How a write route reads the record it changes, for If-Match (src/lib/etag.ts). */
    current?: Current;
  }
  interface FastifyRequest {
    /** Set when If-None-Match named the answer's ETag: the answer goes out as 304 without a body. */
    notModified: boolean;
  }
}

const SAFE_NAME = /^[a-z_]+$/;

const stale = () =>
  new AppError(
    'PRECONDITION_FAILED',
    'The record changed since the ETag in If-Match was read; GET it again and retry with its new ETag',
  );

/** The one record a success answer holds, or undefined (lists, bulk results, deletions). */
function recordOf(request: FastifyRequest, reply: FastifyReply, payload: unknown): object | undefined {
  if (reply.statusCode < 200 || reply.statusCode > 299 || request.method === 'DELETE') return undefined;
  if (!request.routeOptions.url?.startsWith('/api/v1')) return undefined;
  if (typeof payload !== 'object' || payload === null) return undefined;
  const { success, data, meta } = payload as { success?: unknown; data?: unknown; meta?: unknown };
  if (success !== true || meta !== undefined || typeof data !== 'object' || data === null || Array.isArray(data)) {
    return undefined;
  }
  return data;
}

export default fp(
  async function etags(app: FastifyInstance) {
    app.decorateRequest('notModified', false);

    app.addHook('preSerialization', (request, reply, payload, done) => {
      const record = recordOf(request, reply, payload);
      if (record !== undefined) {
        const etag = etagOf(record);
        reply.header('etag', etag);
        const since = request.headers['if-none-match'];
        if (request.method === 'GET' && typeof since === 'string' && isNotModified(since, etag)) {
          request.notModified = true;
          reply.code(304);
        }
      }
      done(null, payload);
    });
    app.addHook('onSend', (request, reply, payload, done) => {
      if (!request.notModified || reply.statusCode !== 304) return done(null, payload);
      reply.removeHeader('content-type');
      reply.removeHeader('content-length');
      done(null, null);
    });

    // Without If-Match the route's own handler is called as it is: no promise of this layer's own.
    const checked = (inner: RouteHandlerMethod, current: Current): RouteHandlerMethod =>
      function (this: FastifyInstance, request: FastifyRequest, reply: FastifyReply) {
        const expected = request.headers['if-match'];
        if (typeof expected !== 'string') return inner.call(this, request, reply);
        return matched.call(this, inner, current, request, reply, expected);
      };

    async function matched(
      this: FastifyInstance,
      inner: RouteHandlerMethod,
      current: Current,
      request: FastifyRequest,
      reply: FastifyReply,
      expected: string,
    ): Promise<unknown> {
      const key = (request.params as Record<string, string>)[current.param]!;
      const check = async (x: NonNullable<ReturnType<typeof requestTx>>) => {
        if (x.dialect === 'postgres') {
          await x.executeQuery(
            CompiledQuery.raw(`select 1 from ${current.table} where ${current.column} = $1 for update`, [key]),
          );
        }
        const record = await current.read(x, key);
        if (record === undefined ? current.upsert === true : !ifMatchHolds(expected, etagOf(record))) throw stale();
      };
      const open = requestTx();
      if (open !== undefined) {
        await check(open);
        return inner.call(this, request, reply);
      }
      return app.ctx.store.transact(async (tx) => {
        await check(tx);
        return inRequestTx(tx, async () => inner.call(this, request, reply));
      });
    }

    app.addHook('onRoute', (route) => {
      const current = route.config?.current;
      if (current === undefined) return;
      if (!SAFE_NAME.test(current.table) || !SAFE_NAME.test(current.column)) {
        throw new Error(`Route ${route.method} ${route.url}: config.current names an unsafe table or column`);
      }
      route.handler = checked(route.handler as RouteHandlerMethod, current);
    });
  },
  { name: 'etags', dependencies: ['gate'] },
);
