// Owns the API description: the OpenAPI 3.1 document at /api/v1/openapi.json, generated from the
// route schemas, and the interactive reference at /docs, served from the package (no CDN).
import scalar from '@scalar/fastify-api-reference';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';

export default fp(
  async function docs(app: FastifyInstance) {
    app.get('/api/v1/openapi.json', { config: { access: 'public' }, schema: { hide: true } }, async () =>
      app.swagger(),
    );
    await app.register(scalar, {
      routePrefix: '/docs',
      configuration: { url: '/api/v1/openapi.json', title: 'Guest Messaging and Operations API' },
    });
  },
  { name: 'docs', dependencies: ['@fastify/swagger'] },
);
