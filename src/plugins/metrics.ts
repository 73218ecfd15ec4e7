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

interface Series {
  labels: { method: string; route: string; status_code: number };
  /** Observations per bucket of BUCKETS (not cumulative), then those above the last. */
  counts: Float64Array;
  sum: number;
  count: number;
}

/**
 * The request-duration histogram, exported as prom-client's Histogram exports one: an answer adds
 * to its series' counts in place, found by route, method and status, where prom-client's own
 * `observe` builds a labels object and a key string per call (every request pays for it).
 */
class Durations {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private readonly series = new Map<string, Map<string, Map<number, Series>>>();

  constructor(
    readonly name: string,
    readonly help: string,
  ) {}

  observe(route: string, method: string, status: number, seconds: number): void {
    let byMethod = this.series.get(route);
    if (byMethod === undefined) {
      byMethod = new Map();
      this.series.set(route, byMethod);
    }
    let byStatus = byMethod.get(method);
    if (byStatus === undefined) {
      byStatus = new Map();
      byMethod.set(method, byStatus);
    }
    let s = byStatus.get(status);
    if (s === undefined) {
      s = {
        labels: { method, route, status_code: status },
        counts: new Float64Array(BUCKETS.length + 1),
        sum: 0,
        count: 0,
      };
      byStatus.set(status, s);
    }
    let i = 0;
    while (i < BUCKETS.length && seconds > BUCKETS[i]!) i++;
    s.counts[i]! += 1;
    s.sum += seconds;
    s.count += 1;
  }

  /** What prom-client's registry renders as text: bucket labels apart from the series' own. */
  async getForPromString() {
    const values: {
      labels: Record<string, string | number>;
      sharedLabels: Series['labels'];
      value: number;
      metricName: string;
    }[] = [];
    for (const byMethod of this.series.values()) {
      for (const byStatus of byMethod.values()) {
        for (const s of byStatus.values()) {
          let acc = 0;
          BUCKETS.forEach((le, i) => {
            acc += s.counts[i]!;
            values.push({ labels: { le }, sharedLabels: s.labels, value: acc, metricName: `${this.name}_bucket` });
          });
          values.push(
            { labels: { le: '+Inf' }, sharedLabels: s.labels, value: s.count, metricName: `${this.name}_bucket` },
            { labels: {}, sharedLabels: s.labels, value: s.sum, metricName: `${this.name}_sum` },
            { labels: {}, sharedLabels: s.labels, value: s.count, metricName: `${this.name}_count` },
          );
        }
      }
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }

  /** The same with each value's labels whole (the registry's JSON form). */
  async get() {
    const data = await this.getForPromString();
    return {
      ...data,
      values: data.values.map(({ labels, sharedLabels, ...v }) => ({ ...v, labels: { ...labels, ...sharedLabels } })),
    };
  }

  reset(): void {
    this.series.clear();
  }
}

export default fp(
  async function metrics(app: FastifyInstance) {
    const token = app.ctx.config.metricsToken;
    if (token === null) return;
    const prom = await import('prom-client');
    const registry = new prom.Registry();
    prom.collectDefaultMetrics({ register: registry });
    const registers = [registry];

    const duration = new Durations(
      'http_request_duration_seconds',
      'Time from request to response, by method, route pattern and status',
    );
    registry.registerMetric(duration as never);
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
      duration.observe(route, request.method, reply.statusCode, reply.elapsedTime / 1000);
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
