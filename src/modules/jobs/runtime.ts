// Owns the job runner's life in one instance: made and started with the app (modules register
// their kinds on `app.jobs`), woken at once when another instance commits a job (Redis pub/sub on
// the event feed's connections: src/lib/wake-bus.ts; without Redis the poll finds it),
// finished jobs purged hourly past their retention, and stopped, its leases handed back, on close.
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { JobRunner } from './runner.js';

declare module 'fastify' {
  interface FastifyInstance {
    jobs: JobRunner;
  }
}

const PURGE_EVERY_MS = 3_600_000;
/**
 * How long a claim holds a job unless renewed (every quarter of it while the run lasts): a crashed
 * instance's jobs run again this long after, so it is short. A run whose renewals fail is aborted,
 * and a handler that records its end in its own transaction then rolls back (docs/jobs.md).
 */
const LEASE_MS = 10_000;

export default fp(
  async function jobsRuntime(app: FastifyInstance) {
    const { config, store } = app.ctx;
    // The feed's poll interval (1 s by default): with the timer to the next due job, a job due
    // with no other traffic runs well within 5 s, and another instance's job within one poll.
    const runner = new JobRunner({ db: store, log: app.log, pollMs: config.eventPollIntervalMs, leaseMs: LEASE_MS });
    app.decorate('jobs', runner);

    // On the event feed's pub/sub connections (src/lib/wake-bus.ts), a channel of its own.
    const bus = app.eventsRuntime.bus;
    // The message names the job's kind: the others are not looked for (an unknown one wakes all).
    bus.subscribe('jobs', (kind) => runner.wake(kind));
    const off = runner.enqueued.on((kind) => bus.publish('jobs', kind));

    const purge = setInterval(() => {
      runner.purge().catch((err: unknown) => app.log.warn({ err }, 'job purge failed'));
    }, PURGE_EVERY_MS);
    purge.unref();
    runner.start();

    app.addHook('onClose', async () => {
      off();
      clearInterval(purge);
      await runner.stop();
    });
  },
  // The event feed's runtime makes the Redis wake-up bus, and closes it after this one stops.
  { name: 'jobs-runtime', dependencies: ['events-runtime'] },
);
