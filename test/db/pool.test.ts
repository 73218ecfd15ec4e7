// Tests the PostgreSQL pool under a burst: requests beyond the pool's connections wait their turn
// rather than failing after the connect timeout, and past the waiting bound (PG_POOL_MAX_WAITING)
// a request is refused at once with 503 and Retry-After, never left to pile up.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pg from 'pg';
import { buildTestApp, call, createStaff, TEST_STORE } from '../helpers.js';

/** Holds an exclusive lock on `guests` from a connection of its own until `release` is called. */
async function lockGuests(url: string) {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  await c.query('begin');
  await c.query('lock table guests in access exclusive mode');
  let released = false;
  return {
    get released() {
      return released;
    },
    async release() {
      released = true;
      await c.query('commit');
      await c.end();
    },
  };
}

const dbUrl = (app: Awaited<ReturnType<typeof buildTestApp>>) => {
  const store = app.ctx.config.store;
  assert.equal(store.kind, 'postgres');
  return store.url;
};

test('a burst larger than the PostgreSQL pool waits for connections instead of failing', async (t) => {
  if (TEST_STORE !== 'postgres') return t.skip('SQLite has no connection pool');
  const app = await buildTestApp(t, { RATE_LIMIT_STANDARD: '1000', PG_POOL_SIZE: '4' });
  const admin = await createStaff(app, 'admin');
  const lock = await lockGuests(dbUrl(app));
  const posts = Array.from({ length: 24 }, (_, i) =>
    call(app, 'POST', '/guests', { token: admin.token, body: { name: `Burst ${i}` } }),
  );
  // Longer than the connect timeout (2 s): the queued requests must still be waiting, not refused.
  await new Promise((r) => setTimeout(r, 2600));
  await lock.release();
  const results = await Promise.all(posts);
  assert.deepEqual(
    results.map((r) => r.status),
    results.map(() => 201),
  );
  const list = await call(app, 'GET', '/guests?limit=100', { token: admin.token });
  assert.equal(list.body.meta.total, 24);
});

test('past PG_POOL_MAX_WAITING a request is refused at once with 503 and Retry-After', async (t) => {
  if (TEST_STORE !== 'postgres') return t.skip('SQLite has no connection pool');
  const app = await buildTestApp(t, { RATE_LIMIT_STANDARD: '1000', PG_POOL_SIZE: '2', PG_POOL_MAX_WAITING: '3' });
  const admin = await createStaff(app, 'admin');
  const lock = await lockGuests(dbUrl(app));
  const refusedWhileLocked: boolean[] = [];
  const posts = Array.from({ length: 12 }, (_, i) =>
    call(app, 'POST', '/guests', { token: admin.token, body: { name: `Queued ${i}` } }).then((r) => {
      if (r.status === 503) refusedWhileLocked.push(!lock.released);
      return r;
    }),
  );
  // Long enough for every request to reach the pool on a loaded machine: a refusal must come
  // while the lock still holds the pool's connections.
  await new Promise((r) => setTimeout(r, 1500));
  await lock.release();
  const results = await Promise.all(posts);
  const refused = results.filter((r) => r.status === 503);
  const created = results.filter((r) => r.status === 201);
  assert.equal(refused.length + created.length, 12, `statuses: ${results.map((r) => r.status)}`);
  assert.ok(refused.length >= 12 - 2 - 3, `at most 5 can hold or wait for a connection, ${created.length} did`);
  assert.ok(refusedWhileLocked.every(Boolean), 'every refusal came at once, while the pool was still full');
  for (const r of refused) {
    assert.equal(r.body.error.code, 'SERVICE_UNAVAILABLE');
    assert.equal(r.headers['retry-after'], '1');
  }
  const list = await call(app, 'GET', '/guests?limit=100', { token: admin.token });
  assert.equal(list.body.meta.total, created.length);
});

test('the pool’s connections run with the statement timeout and without JIT compilation', async (t) => {
  if (TEST_STORE !== 'postgres') return t.skip('SQLite has no connection pool');
  const app = await buildTestApp(t);
  const { sql } = await import('kysely');
  const read = async (name: string) =>
    (await sql<{ v: string }>`select current_setting(${name}) as v`.execute(app.ctx.store.db)).rows[0]!.v;
  // A plan costed above jit_above_cost would otherwise be compiled first (docs/deploy.md).
  assert.equal(await read('jit'), 'off');
  assert.equal(await read('statement_timeout'), '15s');
});
