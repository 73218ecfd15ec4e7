// Owns composing the application from config: the Fastify options, the store, then one plugin per
// concern and the routes. It never listens; server.ts does, and tests call buildApp and use inject.
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import type { Redis } from 'ioredis';
import type { Config } from './config.js';
import { migrate } from './db/migrate.js';
import { openStore, type Store } from './db/store.js';
import {
  buildSerializer,
  buildSerializerLazily,
  compileValidator,
  compileValidatorLazily,
} from './lib/compiled-schemas.js';
import { TokenService } from './lib/jwt.js';
import { PageCache } from './lib/page-cache.js';
import { CursorCodec } from './lib/pages.js';
import type { Counter } from './lib/rate-limiter.js';
import { requestId } from './lib/request-id.js';
import { requestLogger, serializeRequest } from './lib/request-logger.js';
import { ERROR_BODIES, ErrorBody } from './lib/schemas.js';
import { apiKeysRoutes } from './modules/api-keys/routes.js';
import { SecretHasher } from './modules/api-keys/secret.js';
import { attachmentsRoutes } from './modules/attachments/routes.js';
import attachmentsRuntime from './modules/attachments/runtime.js';
import { auditRoutes } from './modules/audit/routes.js';
import { authRoutes } from './modules/auth/routes.js';
import { cannedResponsesRoutes } from './modules/canned-responses/routes.js';
import { channelsRoutes } from './modules/channels/routes.js';
import channelsRuntime from './modules/channels/runtime.js';
import { conversationsRoutes } from './modules/conversations/routes.js';
import snooze from './modules/conversations/snooze.js';
import { eventsRoutes } from './modules/events/routes.js';
import type { EventStreamOptions } from './modules/events/runtime.js';
import eventsRuntime from './modules/events/runtime.js';
import { guestsRoutes } from './modules/guests/routes.js';
import { healthRoutes } from './modules/health/routes.js';
import jobsRuntime from './modules/jobs/runtime.js';
import { knowledgeRoutes } from './modules/knowledge/routes.js';
import { reportsRoutes } from './modules/reports/routes.js';
import slaEvents from './modules/reports/sla-events.js';
import { recentSearchRuntime } from './modules/search/recent.js';
import { searchRoutes } from './modules/search/routes.js';
import { settingsRoutes } from './modules/settings/routes.js';
import { staffRoutes } from './modules/staff/routes.js';
import journeys from './modules/stays/journey-steps.js';
import { staysRoutes } from './modules/stays/routes.js';
import { suggestionsRoutes } from './modules/suggestions/routes.js';
import { tasksRoutes } from './modules/tasks/routes.js';
import { webhooksRoutes } from './modules/webhooks/routes.js';
import { type ResolveHost, resolveHost } from './modules/webhooks/url-guard.js';
import audit from './plugins/audit.js';
import cors from './plugins/cors.js';
import counters from './plugins/counters.js';
import docs from './plugins/docs.js';
import errors, { clientErrorHandler, renderError } from './plugins/errors.js';
import etags from './plugins/etags.js';
import gate, { countRequest } from './plugins/gate.js';
import idempotency from './plugins/idempotency.js';
import input from './plugins/input.js';
import location from './plugins/location.js';
import metrics from './plugins/metrics.js';
import openapi from './plugins/openapi.js';
import revocation, { type Revoke } from './plugins/revocation.js';

/**
 * What routes, hooks and services read from the app: config, store, tokens, and what the counters
 * and revocation plugins made (read here, not from their own decorations, so there is one place).
 */
export interface AppContext {
  config: Config;
  store: Store;
  tokens: TokenService;
  /** Rate-limit counters (src/plugins/counters.ts). */
  counter: Counter;
  /** The app's Redis connection, null without REDIS_URL (src/plugins/counters.ts). */
  redis: Redis | null;
  /** Signs and checks list cursors (src/lib/pages.ts). */
  cursors: CursorCodec;
  /** Hashes and checks API key secrets (src/modules/api-keys/secret.ts). */
  apiKeys: SecretHasher;
  /** Revokes a token id until its expiry (src/plugins/revocation.ts). */
  revoke: Revoke;
  /** Set when shutdown begins: /readyz answers 503 while requests are still served. */
  lifecycle: { draining: boolean };
  /** Resolves a webhook URL's host for its address check (src/modules/webhooks/url-guard.ts). */
  resolveHost: ResolveHost;
  /** List pages kept under the store's data version (src/lib/page-cache.ts); null when PAGE_CACHE=false. */
  pageCache: PageCache | null;
}

declare module 'fastify' {
  interface FastifyInstance {
    ctx: AppContext;
  }
}

export interface BuildOptions {
  /** Use this store instead of opening one from config (tests share or prepare stores). */
  store?: Store;
  logger?: FastifyServerOptions['logger'];
  /**
   * How often open event streams' access is checked, a key's stream's longest life and a stream
   * ticket's (tests shorten them).
   */
  eventStreams?: EventStreamOptions;
  /** Resolve webhook hosts with this instead of the system resolver (tests make DNS slow). */
  resolveHost?: ResolveHost;
}

export function loggerOptions(config: Config): FastifyServerOptions['logger'] {
  return {
    level: config.logLevel,
    // At a terminal in development, readable lines; pino-pretty runs in pino's worker thread.
    ...(config.logFormat === 'pretty' && {
      transport: { target: 'pino-pretty', options: { translateTime: 'HH:MM:ss.l', ignore: 'pid,hostname' } },
    }),
    serializers: { req: serializeRequest },
    redact: {
      paths: [
        'req.headers.authorization',
        'req.headers.cookie',
        '*.password',
        '*.newPassword',
        '*.currentPassword',
        '*.token',
        '*.temporaryPassword',
      ],
      censor: '[redacted]',
    },
  };
}

export async function buildApp(config: Config, options: BuildOptions = {}): Promise<FastifyInstance> {
  const app = Fastify({
    // Slow and idle clients (docs/decisions.md): headers and body must arrive within their
    // timeouts or the request is dropped with a 408; these bound the request only, so a live event
    // stream (a long response) is never cut. Node looks for late requests every
    // connectionsCheckingInterval (30 s by default): check often enough for the timeouts to hold.
    requestTimeout: config.requestTimeoutMs,
    keepAliveTimeout: config.keepAliveTimeoutMs,
    http: {
      headersTimeout: config.requestHeadersTimeoutMs,
      requestTimeout: config.requestTimeoutMs,
      connectionsCheckingInterval: Math.max(5, Math.min(1000, Math.floor(config.requestHeadersTimeoutMs / 4))),
    },
    logger: options.logger ?? loggerOptions(config),
    trustProxy: config.trustProxy,
    childLoggerFactory: requestLogger,
    bodyLimit: 1024 * 1024,
    genReqId: requestId,
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 200 },
    onProtoPoisoning: 'error',
    onConstructorPoisoning: 'error',
    clientErrorHandler,
    // Draining requests get a 503 in the envelope from src/plugins/errors.ts instead.
    return503OnClosing: false,
    // Response serializers compiled once per process per schema (src/lib/compiled-schemas.ts).
    schemaController: {
      compilersFactory: { buildSerializer: config.schemaCompile === 'lazy' ? buildSerializerLazily : buildSerializer },
    },
    // A URL the router cannot decode (or a path parameter over maxParamLength) never reaches a
    // route or its hooks: answer it in the envelope with the same headers as every response.
    frameworkErrors: (err, request, reply) => {
      reply.header('x-request-id', request.id);
      countRequest(app, request, reply, 'standard').then(
        () => renderError(err, request, reply),
        (limited: Error) => renderError(limited, request, reply),
      );
    },
  }).withTypeProvider<TypeBoxTypeProvider>();
  // Bodies are JSON only: a text/plain body is 415, not a string handed to the route.
  app.removeContentTypeParser('text/plain');
  // Above the cap Node closes a new connection at once, so the process never runs out of file
  // descriptors (EMFILE) and the connections it already serves carry on.
  app.server.maxConnections = config.maxConnections;
  app.server.headersTimeout = config.requestHeadersTimeoutMs;

  const store =
    options.store ??
    openStore(config.store, {
      sqliteSynchronous: config.sqliteSynchronous,
      pgPoolSize: config.pgPoolSize,
      pgPoolMaxWaiting: config.pgPoolMaxWaiting,
    });
  const ownsStore = options.store === undefined;
  if (ownsStore) await migrate(store);

  // Added first so it runs last: avvio closes in reverse order, and what follows uses the store.
  app.addHook('onClose', async () => {
    if (ownsStore) await store.close();
  });
  await app.register(counters, { config });
  await app.register(revocation, { store, counter: app.counters.counter });

  app.decorate('ctx', {
    config,
    store,
    tokens: new TokenService(config.jwtSecret, config.jwtPreviousSecrets, config.tokenTtlSeconds),
    counter: app.counters.counter,
    redis: app.counters.redis,
    cursors: new CursorCodec([config.jwtSecret, ...config.jwtPreviousSecrets]),
    apiKeys: SecretHasher.fromSecrets(config.apiKeyPepper, [config.jwtSecret, ...config.jwtPreviousSecrets]),
    revoke: app.revoke,
    lifecycle: { draining: false },
    resolveHost: options.resolveHost ?? resolveHost,
    pageCache: config.pageCache ? new PageCache() : null,
  } satisfies AppContext);

  app.setValidatorCompiler(config.schemaCompile === 'lazy' ? compileValidatorLazily : compileValidator);
  app.addSchema(ErrorBody);
  for (const body of ERROR_BODIES) app.addSchema(body);

  // Hooks on every request are callback hooks where they need not wait: an async hook costs a
  // promise and a turn of the microtask queue per request (docs/performance.md).
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    done();
  });

  await app.register(errors);
  await app.register(cors);
  await app.register(gate);
  await app.register(idempotency);
  await app.register(etags);
  await app.register(location);
  await app.register(audit);
  await app.register(input);
  await app.register(openapi);

  await app.register(healthRoutes);
  await app.register(docs);
  await app.register(eventsRuntime, { eventStreams: options.eventStreams });
  await app.register(jobsRuntime);
  await app.register(attachmentsRuntime);
  await app.register(channelsRuntime);
  await app.register(recentSearchRuntime);
  await app.register(snooze);
  await app.register(slaEvents);
  await app.register(journeys);
  await app.register(metrics);
  await app.register(
    async (api) => {
      await api.register(authRoutes, { prefix: '/auth' });
      await api.register(staffRoutes, { prefix: '/staff' });
      await api.register(settingsRoutes, { prefix: '/settings' });
      await api.register(conversationsRoutes, { prefix: '/conversations' });
      await api.register(searchRoutes, { prefix: '/messages' });
      await api.register(guestsRoutes, { prefix: '/guests' });
      await api.register(tasksRoutes, { prefix: '/tasks' });
      await api.register(staysRoutes, { prefix: '/stays' });
      await api.register(knowledgeRoutes, { prefix: '/knowledge' });
      await api.register(eventsRoutes, { prefix: '/events' });
      await api.register(webhooksRoutes, { prefix: '/webhooks' });
      await api.register(channelsRoutes, { prefix: '/channels' });
      await api.register(apiKeysRoutes, { prefix: '/api-keys' });
      await api.register(auditRoutes, { prefix: '/audit-log' });
      await api.register(cannedResponsesRoutes, { prefix: '/canned-responses' });
      await api.register(suggestionsRoutes, { prefix: '/conversations' });
      await api.register(attachmentsRoutes, { prefix: '/attachments' });
      await api.register(reportsRoutes, { prefix: '/reports' });
    },
    { prefix: '/api/v1' },
  );
  await app.ready();
  return app;
}
