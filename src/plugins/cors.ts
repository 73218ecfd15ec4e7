// Owns cross-origin access for browser dashboards on other origins: only the origins listed in
// CORS_ORIGINS, with the request headers the API reads and the response headers it sends exposed
// to scripts. Registered before the gate, so a 401 or 429 still carries the CORS headers and the
// browser lets the page read the error. Nothing is registered when the list is empty.
import cors from '@fastify/cors';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';

export default fp(
  async function corsPlugin(app: FastifyInstance) {
    const origins = app.ctx.config.corsOrigins;
    if (origins.length === 0) return;
    await app.register(cors, {
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
  },
  { name: 'cors' },
);
