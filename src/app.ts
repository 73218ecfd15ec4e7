// Owns building the application from config: store, shared services, validation, plugins and
// routes. It never listens; server.ts does, and tests call buildApp and use inject.
import swagger from '@fastify/swagger';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import type { Redis } from 'ioredis';
import type { Config } from './config.js';
import { migrate } from './db/migrate.js';
import { openStore, type Store } from './db/store.js';
import { buildSerializer, compileValidator } from './lib/compiled-schemas.js';
import { TokenService } from './lib/jwt.js';
import { documentRoute } from './lib/openapi.js';
import { loadRedis } from './lib/optional-deps.js';
import { CursorCodec } from './lib/pages.js';
import { type Counter, MemoryCounter, RedisCounter } from './lib/rate-limiter.js';
import { requestId } from './lib/request-id.js';
import { requestLogger } from './lib/request-logger.js';
import { ErrorBody } from './lib/schemas.js';
import { authRoutes } from './modules/auth/routes.js';
import { conversationsRoutes } from './modules/conversations/routes.js';
import { eventsRoutes } from './modules/events/routes.js';
import eventsRuntime from './modules/events/runtime.js';
import { guestsRoutes } from './modules/guests/routes.js';
import { healthRoutes } from './modules/health/routes.js';
import { knowledgeRoutes } from './modules/knowledge/routes.js';
import { settingsRoutes } from './modules/settings/routes.js';
import { staffRoutes } from './modules/staff/routes.js';
import { tasksRoutes } from './modules/tasks/routes.js';
import { webhooksRoutes } from './modules/webhooks/routes.js';
import docs from './plugins/docs.js';
import errors, { clientErrorHandler, renderError } from './plugins/errors.js';
import gate, { countRequest } from './plugins/gate.js';
import input from './plugins/input.js';
import readCache from './plugins/read-cache.js';

export interface AppContext {
  config: Config;
  store: Store;
  tokens: TokenService;
  counter: Counter;
  redis: Redis | null;
  /** Signs and checks list cursors (src/lib/pages.ts). */
  cursors: CursorCodec;
  /**
   * Revokes a token id until its expiry (logout, refresh, password change). Resolves true when
   * this call revoked it, false when it already was (a concurrent logout or refresh won).
   */
  revoke(jti: string, expSec: number): Promise<boolean>;
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
}

export function loggerOptions(config: Config): FastifyServerOptions['logger'] {
  return {
    level: config.logLevel,
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
    schemaController: { compilersFactory: { buildSerializer } },
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

  const store = options.store ?? openStore(config.store, { sqliteSynchronous: config.sqliteSynchronous });
  const ownsStore = options.store === undefined;
  if (ownsStore) await migrate(store);

  let redis: Redis | null = null;
  let counter: Counter;
  if (config.redisUrl !== null) {
    redis = new (loadRedis())(config.redisUrl, {
      keyPrefix: config.redisKeyPrefix,
      lazyConnect: false,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      connectTimeout: 2000,
      retryStrategy: (times) => Math.min(times * 200, 2000),
    });
    let warned = 0;
    redis.on('error', (err) => {
      if (Date.now() - warned > 10_000) {
        warned = Date.now();
        app.log.warn({ err: err.message }, 'redis unavailable; rate limits count in process until it returns');
      }
    });
    counter = new RedisCounter(redis, () => {});
    // Give Redis a moment to connect so the first requests share counters; if it does not,
    // start anyway: counting falls back to the process and /readyz reports it.
    const r = redis;
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        r.off('ready', done);
        resolve();
      };
      const timer = setTimeout(done, 2000);
      r.once('ready', done);
    });
  } else {
    counter = new MemoryCounter();
  }

  app.decorate('ctx', {
    config,
    store,
    tokens: new TokenService(config.jwtSecret, config.jwtPreviousSecrets, config.tokenTtlSeconds),
    counter,
    redis,
    cursors: new CursorCodec([config.jwtSecret, ...config.jwtPreviousSecrets]),
    async revoke(jti, expSec) {
      const r = await store
        .insertInto('revoked_tokens')
        .values({ jti, expires_at: expSec })
        .onConflict((oc) => oc.column('jti').doNothing())
        .executeTakeFirst();
      return Number(r.numInsertedOrUpdatedRows ?? 0) > 0;
    },
  } satisfies AppContext);

  // Revocations are kept only until the token would have expired anyway.
  const purge = setInterval(() => {
    const now = Math.floor(Date.now() / 1000);
    store
      .deleteFrom('revoked_tokens')
      .where('expires_at', '<', now)
      .execute()
      .catch(() => {});
  }, 3600_000);
  purge.unref();

  app.setValidatorCompiler(compileValidator);
  app.addSchema(ErrorBody);

  // Hooks on every request are callback hooks where they need not wait: an async hook costs a
  // promise and a turn of the microtask queue per request (docs/performance.md).
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    done();
  });
  app.addHook('onClose', async () => {
    clearInterval(purge);
    (counter as { close?: () => void }).close?.();
    if (redis) redis.disconnect();
    if (ownsStore) await store.close();
  });

  await app.register(errors);
  await app.register(gate);
  await app.register(input);
  await app.register(readCache);
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Guest Messaging and Operations API',
        version: '1.0.0',
        description:
          'JSON REST API for guest conversations over WhatsApp, SMS, e-mail and web chat, and the operations that follow.',
      },
      // x-internal (an OpenAPI extension the types do not know): this server is for outside integrators.
      servers: [{ url: '/', 'x-internal': false } as { url: string }],
      components: {
        securitySchemes: {
          bearerAuth: {
            type: 'http',
            scheme: 'bearer',
            bearerFormat: 'JWT',
            description:
              'A JWT from POST /auth/login, following RFC8725 (JWT best current practices): HS256 only, ' +
              'verified against an explicit algorithm list, with exp, iat, jti, iss and aud required.',
          },
        },
      },
    },
    transform: documentRoute,
    refResolver: { buildLocalReference: (json, _base, _frag, i) => String(json.$id ?? `def-${i}`) },
  });
  app.addHook('onRoute', (route) => {
    const access = route.config?.access;
    if (route.schema && access !== undefined && access !== 'public') {
      route.schema.security = [{ bearerAuth: [] }];
    }
  });

  await app.register(healthRoutes);
  await app.register(docs);
  await app.register(eventsRuntime);
  await app.register(
    async (api) => {
      await api.register(authRoutes, { prefix: '/auth' });
      await api.register(staffRoutes, { prefix: '/staff' });
      await api.register(settingsRoutes, { prefix: '/settings' });
      await api.register(conversationsRoutes, { prefix: '/conversations' });
      await api.register(guestsRoutes, { prefix: '/guests' });
      await api.register(tasksRoutes, { prefix: '/tasks' });
      await api.register(knowledgeRoutes, { prefix: '/knowledge' });
      await api.register(eventsRoutes, { prefix: '/events' });
      await api.register(webhooksRoutes, { prefix: '/webhooks' });
    },
    { prefix: '/api/v1' },
  );
  await app.ready();
  return app;
}
