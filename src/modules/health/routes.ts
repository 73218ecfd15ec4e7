// Owns liveness and readiness: /healthz says the process answers; /readyz says the store (and
// Redis, when configured) answer, else 503 so a load balancer stops sending traffic.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { STANDARD_ERRORS } from '../../lib/schemas.js';

const Check = Type.Union([Type.Literal('ok'), Type.Literal('unavailable'), Type.Literal('not_configured')]);
const Ready = Type.Object({
  success: Type.Boolean(),
  data: Type.Object({
    status: Type.Enum(['ready', 'unavailable', 'draining'], {
      description: 'draining: the instance is shutting down and still serves requests; send new ones elsewhere',
    }),
    store: Check,
    redis: Check,
  }),
});

function within<T>(ms: number, p: Promise<T>): Promise<T> {
  return Promise.race([p, new Promise<T>((_, reject) => setTimeout(() => reject(new Error('timeout')), ms).unref())]);
}

export const healthRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const opts = { config: { access: 'public' as const, bucket: false as const } };

  app.get(
    '/healthz',
    {
      ...opts,
      schema: {
        tags: ['operations'],
        operationId: 'checkLiveness',
        summary: 'Liveness: the process is up',
        security: [],
        response: {
          200: Type.Object({ success: Type.Literal(true), data: Type.Object({ status: Type.Literal('ok') }) }),
          500: STANDARD_ERRORS[500],
        },
      },
    },
    async () => ({ success: true as const, data: { status: 'ok' } }),
  );

  app.get(
    '/readyz',
    {
      ...opts,
      schema: {
        tags: ['operations'],
        operationId: 'checkReadiness',
        summary: 'Readiness: the store and Redis answer and the instance is not shutting down (503 otherwise)',
        security: [],
        response: {
          200: Ready,
          503: {
            ...Ready,
            description: 'Not ready: the store or Redis does not answer, or the instance is draining (see `data`)',
          },
        },
      },
    },
    async (_request, reply) => {
      const { store, redis } = app.ctx;
      const storeOk = await within(1000, store.ping()).then(
        () => 'ok' as const,
        () => 'unavailable' as const,
      );
      const redisState =
        redis === null
          ? ('not_configured' as const)
          : await within(1000, redis.ping()).then(
              () => 'ok' as const,
              () => 'unavailable' as const,
            );
      const draining = app.ctx.lifecycle.draining;
      const ready = !draining && storeOk === 'ok' && redisState !== 'unavailable';
      reply.code(ready ? 200 : 503);
      const status = draining ? ('draining' as const) : ready ? ('ready' as const) : ('unavailable' as const);
      return { success: ready, data: { status, store: storeOk, redis: redisState } };
    },
  );
};
