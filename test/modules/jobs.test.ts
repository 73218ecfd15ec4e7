import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance } from 'fastify';
import type { ClaimedJob, NewJob } from '../../src/modules/jobs/runner.js';
import { buildTestApp, call, TEST_STORE } from '../helpers.js';
import { sharedStore, until } from './jobs-helpers.js';

const enqueue = (app: FastifyInstance, job: NewJob) => app.ctx.store.transact((tx) => app.jobs.enqueue(tx, job));

const jobRow = (app: FastifyInstance, id: string) =>
  app.ctx.store.db.selectFrom('jobs').selectAll().where('id', '=', Number(id)).executeTakeFirstOrThrow();

test('a job due at a time runs once, not before it and at most 5 s after, with no other traffic', async (t) => {
  const app = await buildTestApp(t);
  const runs: { at: number; payload: unknown }[] = [];
  app.jobs.register({ kind: 'test.due', run: async (job) => void runs.push({ at: Date.now(), payload: job.payload }) });
  const due = Date.now() + 1500;
  const id = await enqueue(app, { kind: 'test.due', runAt: new Date(due), payload: { n: 1 } });
  await sleep(1000);
  assert.equal(runs.length, 0, 'not run before its time');
  await until(() => runs.length > 0, 6000, 'the job to run');
  const late = runs[0]!.at - due;
  t.diagnostic(`ran ${late} ms after its time`);
  assert.ok(late >= 0 && late <= 5000, `ran ${late} ms after its time`);
  assert.deepEqual(runs[0]!.payload, { n: 1 });
  await sleep(300);
  assert.equal(runs.length, 1, 'once');
  assert.equal((await jobRow(app, id)).status, 'done');
});

test('a key keeps one live job: writing it again reschedules it, cancelling it stops it', async (t) => {
  const app = await buildTestApp(t);
  const runs: unknown[] = [];
  app.jobs.register({ kind: 'test.keyed', run: async (job) => void runs.push(job.payload) });
  const far = new Date(Date.now() + 3600_000);
  const a = await enqueue(app, { kind: 'test.keyed', key: 'k1', runAt: far, payload: 'first' });
  const b = await enqueue(app, { kind: 'test.keyed', key: 'k1', runAt: new Date(Date.now() + 200), payload: 'second' });
  assert.equal(a, b, 'the same job, rescheduled');
  await enqueue(app, { kind: 'test.keyed', key: 'k2', runAt: new Date(Date.now() + 300), payload: 'cancelled' });
  await app.ctx.store.transact((tx) => app.jobs.cancel(tx, 'test.keyed', 'k2'));
  await until(() => runs.length > 0, 5000, 'the rescheduled job');
  await sleep(500);
  assert.deepEqual(runs, ['second']);
  // Done, the key is free for a new job.
  const c = await enqueue(app, { kind: 'test.keyed', key: 'k1', payload: 'third' });
  assert.notEqual(c, a);
  await until(() => runs.length === 2, 5000, 'the new job under the same key');
});

test('a failing job is retried with backoff and fails for good after its attempts', async (t) => {
  const app = await buildTestApp(t);
  const tries: number[] = [];
  app.jobs.register({
    kind: 'test.flaky',
    retryBaseMs: 50,
    run: async (job) => {
      tries.push(job.attempts);
      if (job.attempts < 3) throw new Error(`try ${job.attempts} failed`);
    },
  });
  app.jobs.register({
    kind: 'test.broken',
    retryBaseMs: 20,
    maxAttempts: 2,
    run: async () => {
      throw new Error('always broken');
    },
  });
  const flaky = await enqueue(app, { kind: 'test.flaky' });
  const broken = await enqueue(app, { kind: 'test.broken' });
  await until(async () => (await jobRow(app, flaky)).status === 'done', 8000, 'the flaky job to succeed');
  assert.deepEqual(tries, [1, 2, 3]);
  await until(async () => (await jobRow(app, broken)).status === 'failed', 8000, 'the broken job to fail');
  const row = await jobRow(app, broken);
  assert.equal(Number(row.attempts), 2);
  assert.equal(row.last_error, 'always broken');
});

test("a crashed instance's job runs again once its lease runs out, not before", async (t) => {
  const app = await buildTestApp(t);
  const id = await enqueue(app, { kind: 'test.crash', payload: 'x' });
  // What an instance that claimed the job and died mid-run leaves behind: a lease nobody renews.
  const leaseEnd = Date.now() + 1500;
  await app.ctx.store.db
    .updateTable('jobs')
    .set({ locked_by: 'crashed-instance', locked_until: new Date(leaseEnd).toISOString(), attempts: 1 })
    .where('id', '=', Number(id))
    .execute();
  const runs: { at: number; attempts: number }[] = [];
  app.jobs.register({
    kind: 'test.crash',
    run: async (job) => void runs.push({ at: Date.now(), attempts: job.attempts }),
  });
  await sleep(1000);
  assert.equal(runs.length, 0, 'not while the lease lasts');
  await until(() => runs.length > 0, 6000, 'the job to run again');
  assert.ok(runs[0]!.at >= leaseEnd, 'after the lease');
  assert.ok(runs[0]!.at - leaseEnd <= 5000, `${runs[0]!.at - leaseEnd} ms after the lease ran out`);
  assert.equal(runs[0]!.attempts, 2, 'the crashed run counts as an attempt');
  await sleep(300);
  assert.equal(runs.length, 1);
});

test('a run whose job was rescheduled meanwhile does not record it done: it runs again at the new time', async (t) => {
  const app = await buildTestApp(t);
  let release: () => void = () => {};
  const gate = new Promise<void>((r) => {
    release = r;
  });
  const runs: string[] = [];
  app.jobs.register({
    kind: 'test.moved',
    run: async (job, ctx) => {
      runs.push(job.payload as string);
      if (job.payload === 'old') await gate;
      // Its work and its record in one transaction: refused (and rolled back) if no longer its job.
      await app.ctx.store.transact((tx) => ctx.complete(tx));
    },
  });
  await enqueue(app, { kind: 'test.moved', key: 'm', payload: 'old' });
  await until(() => runs.length === 1, 5000, 'the first run to start');
  await enqueue(app, { kind: 'test.moved', key: 'm', payload: 'new', runAt: new Date(Date.now() + 300) });
  release();
  const row = () => app.ctx.store.db.selectFrom('jobs').selectAll().where('key', '=', 'm').executeTakeFirstOrThrow();
  await until(async () => (await row()).status === 'done', 5000, 'the rescheduled run to be recorded');
  await sleep(200);
  assert.deepEqual(runs, ['old', 'new']);
});

test('two apps on one store run each job exactly once', async (t) => {
  const store = await sharedStore(t);
  const a = await store.start();
  const b = await store.start();
  const ran = new Map<string, string[]>();
  const started = new Map<string, number>();
  for (const [name, app] of [
    ['a', a],
    ['b', b],
  ] as const) {
    app.jobs.register({
      kind: 'test.shared',
      concurrency: 3,
      run: async (job: ClaimedJob, ctx) => {
        started.set(job.id, (started.get(job.id) ?? 0) + 1);
        await sleep(5);
        // The effect and the record commit together: a second run's record would fail and roll back.
        await app.ctx.store.transact(async (tx) => {
          await ctx.complete(tx);
          ran.set(job.id, [...(ran.get(job.id) ?? []), name]);
        });
      },
    });
  }
  const ids: string[] = [];
  for (let i = 0; i < 40; i++) ids.push(await enqueue(i % 2 === 0 ? a : b, { kind: 'test.shared', payload: i }));
  await until(() => ran.size === ids.length, 15_000, 'every job to run');
  await sleep(300);
  for (const id of ids) {
    assert.equal(started.get(id), 1, `job ${id} claimed ${started.get(id)} times`);
    assert.equal(ran.get(id)?.length, 1, `job ${id} ran ${ran.get(id)?.join(',')}`);
  }
  const byApp = [...ran.values()].flat();
  assert.equal(byApp.length, 40);
});

test('a job written on one instance wakes another at once (not at its next poll)', {
  skip: TEST_STORE !== 'postgres' && 'needs Redis: the PostgreSQL run',
}, async (t) => {
  const store = await sharedStore(t);
  // Polls a minute apart: only the wake-up through Redis can make the job run within a second.
  const runner = await store.start({ EVENT_POLL_INTERVAL_MS: '60000' });
  const writer = await store.start({ EVENT_POLL_INTERVAL_MS: '60000' });
  await sleep(300);
  const runs: number[] = [];
  runner.jobs.register({ kind: 'test.remote', run: async () => void runs.push(Date.now()) });
  await sleep(300);
  const at = Date.now();
  await enqueue(writer, { kind: 'test.remote' });
  await until(() => runs.length === 1, 3000, 'the other instance to run it');
  assert.ok(runs[0]! - at < 1500, `ran ${runs[0]! - at} ms after the commit`);
});

test('jobs are counted per kind on /metrics, and finished ones are purged after 7 days', async (t) => {
  const app = await buildTestApp(t, { METRICS_TOKEN: 'metrics-token-0123456789' });
  app.jobs.register({ kind: 'test.metered', run: async () => {} });
  const id = await enqueue(app, { kind: 'test.metered' });
  await enqueue(app, { kind: 'test.metered', runAt: new Date(Date.now() + 3600_000) });
  await until(async () => (await jobRow(app, id)).status === 'done', 5000, 'the job to run');
  const res = await call(app, 'GET', '/metrics', { headers: { authorization: 'Bearer metrics-token-0123456789' } });
  assert.equal(res.status, 200);
  assert.match(res.raw.body, /jobs_runs_total\{kind="test\.metered",outcome="done"\} 1/);
  assert.match(res.raw.body, /jobs_waiting\{kind="test\.metered"\} 1/);
  // Kinds the app registers have their series from the start.
  assert.match(res.raw.body, /jobs_runs_total\{kind="conversation\.wake",outcome="done"\} 0/);
  assert.match(res.raw.body, /jobs_runs_total\{kind="channel\.send",outcome="done"\} 0/);
  assert.match(res.raw.body, /jobs_runs_total\{kind="webhook\.delivery",outcome="done"\} 0/);
  assert.equal(await app.jobs.purge(Date.now() + 6 * 86_400_000), 0, 'kept 7 days');
  assert.equal(await app.jobs.purge(Date.now() + 8 * 86_400_000), 1, 'then purged');
  const left = await app.ctx.store.db.selectFrom('jobs').select('status').execute();
  assert.deepEqual(
    left.map((r) => r.status),
    ['pending'],
  );
});

test('stopping hands running jobs back uncounted: another instance runs them at once, not after the lease', async (t) => {
  const store = await sharedStore(t);
  const first = await store.start();
  let started = false;
  first.jobs.register({
    kind: 'test.stop',
    run: (_job, ctx) =>
      new Promise((_resolve, reject) => {
        started = true;
        ctx.signal.addEventListener('abort', () => reject(new Error('interrupted')));
      }),
  });
  const id = await enqueue(first, { kind: 'test.stop' });
  await until(() => started, 5000, 'the run to start');
  await first.close();
  const second = await store.start();
  const row = await jobRow(second, id);
  assert.deepEqual([row.status, row.locked_by, Number(row.attempts)], ['pending', null, 0]);
  const at = Date.now();
  let ranAt = 0;
  second.jobs.register({
    kind: 'test.stop',
    run: async () => {
      ranAt = Date.now();
    },
  });
  await until(() => ranAt > 0, 5000, 'the other instance to run it');
  assert.ok(ranAt - at < 2000, `ran ${ranAt - at} ms after the other instance registered it`);
});
