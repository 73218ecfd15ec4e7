// Tests the three claims (due jobs, texts' sends, webhook deliveries) on PostgreSQL against the
// statistics such tables have in use: their rows are finished and removed, autovacuum analyzes them
// while they hold none, and the planner then takes them for empty however many rows a burst writes.
// A claim leases at most its limit whatever the plan (the candidates, chosen FOR UPDATE SKIP LOCKED
// with a LIMIT, are read once: a semi-join ran them again for each row of the table and, skipping
// the rows it had just locked, leased them all to one instance), and a claim of a kind reads that
// kind's due jobs in order, never every job of the kind, and records jobs done by their ids.
import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import { sql } from 'kysely';
import type { Executor } from '../../src/db/executor.js';
import { openStore, type Store } from '../../src/db/store.js';
import { claimSends } from '../../src/modules/channels/sends-repository.js';
import { claimJobs, completeJobs } from '../../src/modules/jobs/repository.js';
import { claimDue } from '../../src/modules/webhooks/deliveries-repository.js';
import { freshPostgres, TEST_STORE } from '../helpers.js';

const ROWS = 500;
const SKIP = 'SQLite has no SKIP LOCKED and plans without statistics';

/**
 * A migrated store (no app: nothing else claims its rows) where `write` ran, its rows were removed
 * from `tables` (in that order) and the tables vacuumed and analyzed empty, and `write` ran again:
 * the rows are there, the statistics say none are. Closed before the database is dropped.
 */
async function emptyByStatistics(
  t: TestContext,
  tables: string[],
  write: (store: Store) => Promise<void>,
  body: (store: Store) => Promise<void>,
) {
  const store = openStore({ kind: 'postgres', url: await freshPostgres(t, { migrated: true }) });
  try {
    await write(store);
    for (const table of tables) await sql`delete from ${sql.table(table)}`.execute(store.db);
    // As autovacuum leaves them: no dead entries, and statistics of no rows.
    for (const table of tables) await sql`vacuum (analyze) ${sql.table(table)}`.execute(store.db);
    await write(store);
    await body(store);
  } finally {
    await store.close();
  }
}

const run = (store: Store, text: string) => sql.raw(text).execute(store.db);

const leased = async (store: Store, table: string) => {
  const { rows } = await sql<{ n: string }>`select count(*) as n from ${sql.table(table)}
    where locked_by is not null`.execute(store.db);
  return Number(rows[0]!.n);
};

/**
 * Index entries of jobs read by this session so far (its counts not yet reported, which are never
 * reported inside a transaction): the difference over a statement is what it read.
 */
const indexReads = async (x: Executor) => {
  const { rows } = await sql<{ n: string }>`select sum(pg_stat_get_xact_tuples_returned(indexrelid)) as n
    from pg_index where indrelid = 'jobs'::regclass`.execute(x);
  return Number(rows[0]!.n);
};

test('a claim of due jobs leases at most its limit and reads only its kind in order', async (t) => {
  if (TEST_STORE !== 'postgres') return t.skip(SKIP);
  const write = (store: Store, runAt: string) =>
    run(
      store,
      `insert into jobs (kind, key, payload, status, run_at, attempts, version, created_at, updated_at)
       select 'test.burst', '${runAt}' || i, 'null', 'pending', now() + interval '${runAt}', 0, 0, now(), now()
       from generate_series(1, ${ROWS}) i`,
    );
  await emptyByStatistics(
    t,
    ['jobs'],
    async (store) => {
      await write(store, '1 hour');
    },
    async (store) => {
      /** Claims up to 8 due jobs in a transaction; how many index entries of jobs it read. */
      const claim = () =>
        store.transact(async (tx) => {
          const before = await indexReads(tx);
          const claimed = await claimJobs(tx, 'test-instance', 'test.burst', 8, Date.now() + 60_000);
          return { claimed: claimed.length, read: (await indexReads(tx)) - before };
        });
      const early = await claim();
      assert.equal(early.claimed, 0, 'nothing is due yet');
      assert.ok(early.read <= 10, `a look for due work read ${early.read} index entries of ${ROWS} jobs due later`);
      await write(store, '-1 second');
      const burst = await claim();
      assert.equal(burst.claimed, 8);
      assert.ok(burst.read <= 60, `a claim of 8 read ${burst.read} index entries of ${ROWS} due jobs`);
      assert.equal(await leased(store, 'jobs'), 8);
      // Recording them done reads them by id, not every pending job.
      const done = await store.transact(async (tx) => {
        const held = await sql<{ id: string; version: number }>`select id, version from jobs
          where locked_by = 'test-instance'`.execute(tx);
        const before = await indexReads(tx);
        const recorded = await completeJobs(
          tx,
          'test-instance',
          held.rows.map((r) => ({ id: String(r.id), version: r.version })),
        );
        return { recorded: recorded.size, read: (await indexReads(tx)) - before };
      });
      assert.equal(done.recorded, 8);
      assert.ok(done.read <= 20, `recording 8 jobs done read ${done.read} index entries of ${2 * ROWS} pending jobs`);
    },
  );
});

test("a claim of texts' sends leases at most its limit", async (t) => {
  if (TEST_STORE !== 'postgres') return t.skip(SKIP);
  await emptyByStatistics(
    t,
    ['channel_sends', 'messages', 'conversations'],
    async (store) => {
      await run(
        store,
        `insert into guests (id, name, tags, search_text, created_at, updated_at)
         values ('gst_claims', 'Claims', '[]', '', now(), now()) on conflict do nothing`,
      );
      await run(
        store,
        `insert into conversations (id, guest_id, channel, status, last_message_at, created_at, updated_at)
         select 'cnv_' || i, 'gst_claims', 'sms', 'open', now(), now(), now() from generate_series(1, ${ROWS}) i`,
      );
      await run(
        store,
        `insert into messages (id, conversation_id, direction, type, content, sender_type, delivery_status, created_at)
         select 'msg_' || i, 'cnv_' || i, 'outbound', 'text', 'hello', 'system', 'queued', now()
         from generate_series(1, ${ROWS}) i`,
      );
      await run(
        store,
        `insert into channel_sends (message_id, conversation_id, channel, status, attempts, next_attempt_at, created_at)
         select 'msg_' || i, 'cnv_' || i, 'sms', 'pending', 0, now() - interval '1 second', now()
         from generate_series(1, ${ROWS}) i`,
      );
    },
    async (store) => {
      const claimed = await claimSends(store, 'test-instance', 8, 60_000);
      assert.equal(claimed.length, 8);
      assert.equal(await leased(store, 'channel_sends'), 8);
    },
  );
});

test('a claim of webhook deliveries leases at most its limit', async (t) => {
  if (TEST_STORE !== 'postgres') return t.skip(SKIP);
  await emptyByStatistics(
    t,
    ['webhook_deliveries', 'webhooks'],
    async (store) => {
      await run(
        store,
        `insert into webhooks (id, url, events, active, secret, created_at, updated_at)
         select 'whk_' || i, 'http://127.0.0.1:9/hook', '["*"]', true, 'secret', now(), now()
         from generate_series(1, ${ROWS}) i`,
      );
      await run(
        store,
        `insert into webhook_deliveries (id, webhook_id, event_id, event_type, payload, status, attempts,
           next_attempt_at, created_at, updated_at)
         select 'whd_' || i, 'whk_' || i, i, 'guest.created', '{}', 'pending', 0, now() - interval '1 second',
           now(), now()
         from generate_series(1, ${ROWS}) i`,
      );
    },
    async (store) => {
      const claimed = await claimDue(store, 'test-instance', 8, 60_000);
      assert.equal(claimed.length, 8);
      assert.equal(await leased(store, 'webhook_deliveries'), 8);
    },
  );
});
