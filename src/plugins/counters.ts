// Owns the rate-limit counters (src/lib/rate-limiter.ts) and the Redis connection they share with
// readiness: in Redis when REDIS_URL is set, so every instance counts against the same limits,
// else in process. Redis being away never stops a request: counting falls back to the process
// until it returns, and /readyz reports it.
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { Redis } from 'ioredis';
import type { Config } from '../config.js';
import { loadRedis } from '../lib/optional-deps.js';
import { type Counter, MemoryCounter, RedisCounter } from '../lib/rate-limiter.js';

export interface Counters {
  counter: Counter;
  /** The app's Redis connection, or null when none is configured. */
  redis: Redis | null;
}

declare module 'fastify' {
  interface FastifyInstance {
    counters: Counters;
  }
}

/** How long the first requests may wait for Redis before counting starts without it. */
const CONNECT_WAIT_MS = 2000;
/** At most one "Redis unavailable" warning per this long. */
const WARN_EVERY_MS = 10_000;

async function connect(app: FastifyInstance, config: Config): Promise<Counters> {
  if (config.redisUrl === null) return { counter: new MemoryCounter(), redis: null };
  const redis = new (loadRedis())(config.redisUrl, {
    keyPrefix: config.redisKeyPrefix,
    lazyConnect: false,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: 2000,
    retryStrategy: (times) => Math.min(times * 200, 2000),
  });
  let warned = 0;
  redis.on('error', (err) => {
    if (Date.now() - warned > WARN_EVERY_MS) {
      warned = Date.now();
      app.log.warn({ err: err.message }, 'redis unavailable; rate limits count in process until it returns');
    }
  });
  const counter = new RedisCounter(redis, () => {});
  // Give Redis a moment to connect so the first requests share counters; if it does not,
  // start anyway: counting falls back to the process and /readyz reports it.
  await new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(timer);
      redis.off('ready', done);
      resolve();
    };
    const timer = setTimeout(done, CONNECT_WAIT_MS);
    redis.once('ready', done);
  });
  return { counter, redis };
}

export default fp(
  async function counters(app: FastifyInstance, opts: { config: Config }) {
    const made = await connect(app, opts.config);
    app.decorate('counters', made);
    app.addHook('onClose', async () => {
      (made.counter as { close?: () => void }).close?.();
      made.redis?.disconnect();
    });
  },
  { name: 'counters' },
);
