// Owns the API description: the OpenAPI 3.1 document at /api/v1/openapi.json, generated from the
// route schemas, and the interactive reference at /docs, served from the package (no CDN).
// Both are sent compressed when asked, with ETag and Cache-Control (docs-assets.ts); the document's
// request examples name dates ahead of the day it is served.
// The reference's package is a 4 MB script that costs ~35 MiB of memory once loaded, so it is
// loaded on the first request to /docs, into a small Fastify instance of its own that /docs
// requests are handed to; a server nobody browses never pays for it.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import Fastify from 'fastify';
import fp from 'fastify-plugin';
import { servedDocument } from '../lib/openapi-examples.js';
import { Asset } from './docs-assets.js';

const ROUTE_PREFIX = '/docs';
/** Paths under /docs kept (the page and its script, and room for a few more the package serves). */
const MAX_ASSETS = 16;
const TITLE = 'Guest Messaging and Operations API';

/** A speech bubble with a key: the API's mark, as the browser tab's icon. */
const FAVICON = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 64 64"><rect width="64" height="64" rx="14" fill="#1f4e79"/><path d="M14 18h36a4 4 0 0 1 4 4v18a4 4 0 0 1-4 4H30l-10 8v-8h-6a4 4 0 0 1-4-4V22a4 4 0 0 1 4-4z" fill="#fff"/><circle cx="26" cy="31" r="4" fill="#1f4e79"/><path d="M30 31h12v4" stroke="#1f4e79" stroke-width="3" fill="none"/></svg>`;

/**
 * The reference works with no request leaving this server: no web fonts from the vendor's CDN, no
 * telemetry, and none of the vendor's cloud features (AI agent, MCP, client download, developer
 * tools), which lead nowhere offline. Bearer auth is the scheme the reader is asked for.
 */
const CONFIGURATION = {
  url: '/api/v1/openapi.json',
  title: TITLE,
  metaData: { title: TITLE },
  favicon: '/favicon.svg',
  withDefaultFonts: false,
  telemetry: false,
  hideClientButton: true,
  showDeveloperTools: 'never' as const,
  agent: { disabled: true },
  mcp: { disabled: true },
  authentication: { preferredSecurityScheme: 'bearerAuth' },
};

export default fp(
  async function docs(app: FastifyInstance) {
    // The document changes with a deploy, and its request examples' future dates once a day: made,
    // and compressed, once a day. `no-cache`: a client may keep it but asks each time whether it
    // changed (a 304 when not).
    let document: { day: string; asset: Asset } | null = null;
    app.get('/api/v1/openapi.json', { config: { access: 'public' }, schema: { hide: true } }, (request, reply) => {
      const day = new Date().toISOString().slice(0, 10);
      if (document?.day !== day) {
        const text = servedDocument(app.swagger());
        document = { day, asset: new Asset('application/json; charset=utf-8', Buffer.from(text), 'no-cache') };
      }
      return document.asset.send(request, reply);
    });

    let reference: Promise<FastifyInstance> | null = null;
    const load = async (): Promise<FastifyInstance> => {
      const { default: scalar } = await import('@scalar/fastify-api-reference');
      const sub = Fastify({ logger: false, routerOptions: { ignoreTrailingSlash: true } });
      await sub.register(scalar, {
        routePrefix: ROUTE_PREFIX,
        configuration: CONFIGURATION,
      });
      await sub.ready();
      return sub;
    };
    app.addHook('onClose', async () => {
      if (reference) await (await reference).close();
    });

    // The page and its script, by path, as the package answered them once: the same for every
    // request (the configuration is fixed), so each is kept and compressed once.
    const assets = new Map<string, Asset>();
    const serve = async (request: FastifyRequest, reply: FastifyReply) => {
      const path = request.url.split('?')[0] ?? '';
      const kept = assets.get(path);
      if (kept !== undefined) return kept.send(request, reply);
      reference ??= load().catch((err: unknown) => {
        reference = null;
        throw err;
      });
      const res = await (await reference).inject({ method: 'GET', url: path, headers: { accept: '*/*' } });
      if (res.statusCode === 404) return reply.callNotFound();
      const type = String(res.headers['content-type'] ?? 'application/octet-stream');
      if (res.statusCode !== 200) {
        const location = res.headers.location;
        if (location !== undefined) reply.header('location', location);
        return reply.code(res.statusCode).type(type).send(res.rawPayload);
      }
      // The page's own <title> and icon: the package's template names the vendor.
      const html = type.startsWith('text/html');
      const body = html
        ? Buffer.from(
            res.payload.replace(
              /<title>[^<]*<\/title>/,
              `<title>${TITLE}</title>\n    <link rel="icon" type="image/svg+xml" href="/favicon.svg" />`,
            ),
          )
        : res.rawPayload;
      // The page is asked about each time (it names the script); the script, at an unversioned path,
      // is kept an hour and then revalidated by its ETag.
      const asset = new Asset(type, body, html ? 'no-cache' : 'public, max-age=3600');
      if (assets.size < MAX_ASSETS) assets.set(path, asset);
      return asset.send(request, reply);
    };
    const options = { config: { access: 'public' as const }, schema: { hide: true } };
    app.get(ROUTE_PREFIX, options, serve);
    for (const path of ['/favicon.svg', '/favicon.ico']) {
      app.get(
        path,
        { config: { access: 'public' as const, bucket: false as const }, schema: { hide: true } },
        async (_request, reply) =>
          reply.type('image/svg+xml').header('cache-control', 'public, max-age=86400').send(FAVICON),
      );
    }
    app.get(`${ROUTE_PREFIX}/*`, options, serve);
  },
  { name: 'docs', dependencies: ['@fastify/swagger'] },
);
