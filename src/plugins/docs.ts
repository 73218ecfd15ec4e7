// Owns the API description: the OpenAPI 3.1 document at /api/v1/openapi.json, generated from the
// route schemas, and the interactive reference at /docs, served from the package (no CDN).
// The reference's package is a 4 MB script that costs ~35 MiB of memory once loaded, so it is
// loaded on the first request to /docs, into a small Fastify instance of its own that /docs
// requests are handed to; a server nobody browses never pays for it.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import Fastify from 'fastify';
import fp from 'fastify-plugin';

const ROUTE_PREFIX = '/docs';

export default fp(
  async function docs(app: FastifyInstance) {
    app.get('/api/v1/openapi.json', { config: { access: 'public' }, schema: { hide: true } }, async () =>
      app.swagger(),
    );

    let reference: Promise<FastifyInstance> | null = null;
    const load = async (): Promise<FastifyInstance> => {
      const { default: scalar } = await import('@scalar/fastify-api-reference');
      const sub = Fastify({ logger: false, routerOptions: { ignoreTrailingSlash: true } });
      await sub.register(scalar, {
        routePrefix: ROUTE_PREFIX,
        configuration: { url: '/api/v1/openapi.json', title: 'Guest Messaging and Operations API' },
      });
      await sub.ready();
      return sub;
    };
    app.addHook('onClose', async () => {
      if (reference) await (await reference).close();
    });

    const serve = async (request: FastifyRequest, reply: FastifyReply) => {
      reference ??= load().catch((err: unknown) => {
        reference = null;
        throw err;
      });
      const res = await (await reference).inject({
        method: request.method as 'GET' | 'HEAD',
        url: request.url,
        headers: { accept: request.headers.accept ?? '*/*' },
      });
      if (res.statusCode === 404) return reply.callNotFound();
      for (const name of ['content-type', 'location', 'cache-control'] as const) {
        const value = res.headers[name];
        if (value !== undefined) reply.header(name, value);
      }
      return reply.code(res.statusCode).send(res.rawPayload);
    };
    const options = { config: { access: 'public' as const }, schema: { hide: true } };
    app.get(ROUTE_PREFIX, options, serve);
    app.get(`${ROUTE_PREFIX}/*`, options, serve);
  },
  { name: 'docs', dependencies: ['@fastify/swagger'] },
);
