// Owns /metrics: Prometheus text for a scraper holding METRICS_TOKEN (the route does not exist
// without it). Request durations per route and status, rate-limit refusals, webhook delivery
// outcomes, how far the webhook dispatcher is behind, texts sent by channel and outcome and those
// waiting, runs of every kind of background work (docs/jobs.md), the store's connection pool, and the
// process's own metrics. prom-client is loaded only when metrics are on.
import { timingSafeEqual } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { authError } from '../lib/errors.js';
import { waitingByChannel } from '../modules/channels/sends-repository.js';
import { jobsWaiting } from '../modules/jobs/repository.js';
import { nextDueAt } from '../modules/webhooks/deliveries-repository.js';

/** Every channel a text can leave by: each has its series from the start, at 0 until it has texts. */
const CHANNELS = ['email', 'sms', 'whatsapp', 'web'] as const;

/** Buckets from 1 ms to 10 s: an API request, not a batch job. */
const BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export default fp(
  async function metrics(app: FastifyInstance) {
    const token = app.ctx.config.metricsToken;
    if (token === null) return;
    const prom = await import('prom-client');
    const registry = new prom.Registry();
    prom.collectDefaultMetrics({ register: registry });
    const registers = [registry];

    const duration = new prom.Histogram({
      name: 'http_request_duration_seconds',
      help: 'Time from request to response, by method, route pattern and status',
      labelNames: ['method', 'route', 'status_code'],
      buckets: BUCKETS,
      registers,
    });
    const refusals = new prom.Counter({
      name: 'rate_limit_refusals_total',
      help: 'Requests refused with 429 RATE_LIMITED, by route pattern',
      labelNames: ['route'],
      registers,
    });
    const deliveries = new prom.Counter({
      name: 'webhook_delivery_attempts_total',
      help: 'Recorded webhook delivery attempts by outcome: succeeded, retry (will be tried again) or failed',
      labelNames: ['outcome'],
      registers,
    });
    new prom.Gauge({
      name: 'webhook_dispatch_lag_seconds',
      help: 'How long the oldest due webhook delivery has been waiting (0 when none is due)',
      registers,
      async collect() {
        const due = await nextDueAt(app.ctx.store).catch(() => null);
        this.set(due === null ? 0 : Math.max(0, (Date.now() - due) / 1000));
      },
    });
    new prom.Gauge({
      name: 'store_pool_connections',
      help: 'Connections of the store pool by state: total, idle, waiting (clients queued for one)',
      labelNames: ['state'],
      registers,
      collect() {
        const use = app.ctx.store.poolUse();
        if (use === null) return;
        for (const [state, n] of Object.entries(use)) this.set({ state }, n);
      },
    });
    const sends = new prom.Counter({
      name: 'channel_sends_total',
      help: 'Recorded outcomes of sending texts, by channel and outcome: sent, failed or retried (will be tried again)',
      labelNames: ['channel', 'outcome'],
      registers,
    });
    new prom.Gauge({
      name: 'channel_sends_waiting',
      help: 'Texts waiting to be sent (queued, or due again after a retryable failure), by channel',
      labelNames: ['channel'],
      registers,
      async collect() {
        const waiting = await waitingByChannel(app.ctx.store).catch(() => null);
        if (waiting === null) return;
        for (const channel of CHANNELS) this.set({ channel }, waiting.get(channel) ?? 0);
      },
    });
    // Every kind of work run after commit, one series per kind (docs/jobs.md): the jobs table's
    // kinds, texts sent (channel.send) and webhook deliveries (webhook.delivery).
    const runs = new prom.Counter({
      name: 'jobs_runs_total',
      help: 'Runs of background work by kind and outcome: done, retried (due again later), failed, released',
      labelNames: ['kind', 'outcome'],
      registers,
    });
    for (const kind of [...app.jobs.kinds(), 'channel.send', 'webhook.delivery'])
      runs.inc({ kind, outcome: 'done' }, 0);
    const waitingJobs = async () => (await jobsWaiting(app.ctx.store).catch(() => null)) ?? new Map();
    new prom.Gauge({
      name: 'jobs_waiting',
      help: 'Jobs not yet done (due or not, running included), by kind',
      labelNames: ['kind'],
      registers,
      async collect() {
        const waiting = await waitingJobs();
        for (const kind of new Set([...app.jobs.kinds(), ...waiting.keys()])) {
          this.set({ kind }, waiting.get(kind)?.waiting ?? 0);
        }
      },
    });
    new prom.Gauge({
      name: 'jobs_lag_seconds',
      help: 'How long the oldest due job of a kind has been waiting (0 when none is due), by kind',
      labelNames: ['kind'],
      registers,
      async collect() {
        const waiting = await waitingJobs();
        for (const kind of new Set([...app.jobs.kinds(), ...waiting.keys()])) {
          this.set({ kind }, waiting.get(kind)?.lagSeconds ?? 0);
        }
      },
    });
    const OUTCOME = {
      succeeded: 'done',
      retry: 'retried',
      failed: 'failed',
      sent: 'done',
      retried: 'retried',
    } as const;
    const offJobs = app.jobs.settled.on(({ bucket, outcome }) => runs.inc({ kind: bucket, outcome }));
    const off = app.eventsRuntime.dispatcher.outcomes.on((outcome) => {
      deliveries.inc({ outcome });
      runs.inc({ kind: 'webhook.delivery', outcome: OUTCOME[outcome] });
    });
    const offSends = app.channelDispatcher.settled.on(({ channel, outcome }) => {
      sends.inc({ channel, outcome });
      runs.inc({ kind: 'channel.send', outcome: OUTCOME[outcome] });
    });
    app.addHook('onClose', async () => {
      off();
      offSends();
      offJobs();
      registry.clear();
    });

    app.addHook('onResponse', (request, reply, done) => {
      // The route's pattern, not its URL: ids would make a series per record.
      const route = request.routeOptions.url ?? 'unmatched';
      duration.observe({ method: request.method, route, status_code: reply.statusCode }, reply.elapsedTime / 1000);
      if (reply.statusCode === 429) refusals.inc({ route });
      done();
    });

    const expected = Buffer.from(`Bearer ${token}`);
    app.get(
      '/metrics',
      { config: { access: 'public', bucket: false }, schema: { hide: true } },
      async (request, reply) => {
        const given = Buffer.from(request.headers.authorization ?? '');
        if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
          const sent = given.length > 0;
          throw authError(
            sent ? 'TOKEN_INVALID' : 'TOKEN_MISSING',
            'GET /metrics needs Authorization: Bearer <METRICS_TOKEN>',
            sent,
          );
        }
        reply.type(registry.contentType);
        return registry.metrics();
      },
    );
  },
  { name: 'metrics', dependencies: ['gate', 'events-runtime', 'channels-runtime', 'jobs-runtime'] },
);
