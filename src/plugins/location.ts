// Owns the Location header of a 201: the URL of the created record's GET. By default
// that is the request's path and the record's id (POST /guests → /guests/<id>, POST
// /conversations/<id>/messages → /conversations/<id>/messages/<mid>); a route whose answer is not the
// record itself says where its record lives with `config.location`. It is set before serialization,
// so an idempotent replay of the answer (src/plugins/idempotency.ts) carries it too.
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * Where the record a 201 of this route made can be read, from the answer's `data` (null:
     * nowhere); false: the route's 201 makes nothing that can be read back (a stream ticket).
     */
    location?: false | ((data: Record<string, unknown>) => string | null);
  }
}

export default fp(
  async function location(app: FastifyInstance) {
    app.addHook('preSerialization', (request, reply, payload, done) => {
      if (reply.statusCode !== 201) return done(null, payload);
      const data = (payload as { data?: unknown } | null)?.data;
      if (typeof data !== 'object' || data === null || Array.isArray(data)) return done(null, payload);
      const own = request.routeOptions.config.location;
      if (own === false) return done(null, payload);
      const id = (data as { id?: unknown }).id;
      const url =
        own !== undefined
          ? own(data as Record<string, unknown>)
          : typeof id === 'string'
            ? `${request.url.split('?')[0]!.replace(/\/+$/, '')}/${encodeURIComponent(id)}`
            : null;
      if (url !== null) reply.header('location', url);
      done(null, payload);
    });
  },
  { name: 'location' },
);
