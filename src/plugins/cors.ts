// Owns cross-origin access for browser dashboards on other origins: only the origins listed in
// CORS_ORIGINS, with the request headers the API reads and the response headers it sends exposed
// to scripts. Registered before the gate, so a 401 or 429 still carries the CORS headers and the
// browser lets the page read the error. Nothing is registered when the list is empty. A request
// without an Origin header (a server calling, not a browser) passes with only `Vary: Origin`: the
// CORS headers are for browsers, which always send Origin on a cross-origin request.
import cors from '@fastify/cors';
import type { FastifyInstance, onRequestHookHandler } from 'fastify';
import fp from 'fastify-plugin';

export default fp(
  async function corsPlugin(app: FastifyInstance) {
    const origins = app.ctx.config.corsOrigins;
    if (origins.length === 0) return;
    // @fastify/cors's request hook, called only for requests with an Origin (and for OPTIONS, whose
    // answer without one it decides): the plugin adds the hook through this instance while it loads.
    const addHook = app.addHook;
    app.addHook = function (this: FastifyInstance, name: string, hook: unknown) {
      if (name !== 'onRequest') return addHook.call(this, name as never, hook as never);
      const cors = hook as onRequestHookHandler;
      const onRequest: onRequestHookHandler = function (request, reply, done) {
        if (request.headers.origin !== undefined || request.method === 'OPTIONS') {
          return cors.call(this, request, reply, done);
        }
        reply.header('vary', 'Origin');
        done();
      };
      return addHook.call(this, 'onRequest', onRequest as never);
    } as typeof app.addHook;
    try {
      await registerCors(app, origins);
    } finally {
      app.addHook = addHook;
    }
  },
  { name: 'cors' },
);

function registerCors(app: FastifyInstance, origins: readonly string[]) {
  return app.register(cors, {
    origin: [...origins],
    methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'],
    allowedHeaders: [
      'Authorization',
      'Content-Type',
      'Cache-Control',
      'Idempotency-Key',
      'If-Match',
      'If-None-Match',
      'Last-Event-ID',
      'X-Request-Id',
    ],
    exposedHeaders: [
      'X-Request-Id',
      'X-RateLimit-Limit',
      'X-RateLimit-Remaining',
      'X-RateLimit-Reset',
      'Retry-After',
      'Link',
      'ETag',
      'Idempotent-Replayed',
      'WWW-Authenticate',
    ],
    // Tokens travel in Authorization, never in cookies.
    credentials: false,
    maxAge: 600,
  });
}
