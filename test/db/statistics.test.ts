// Tests what a new PostgreSQL store tells the planner: no migration leaves statistics that say a
// table is empty. The planner trusts them (a table analyzed empty is planned as one page), and the
// plans it caches on long-lived connections (foreign-key checks, the functions' statements) keep
// reading such a table from end to end until autovacuum analyzes it again: on a new store with
// 10,000 texts due in one minute, every text's send row checked its message by reading them all.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pg from 'pg';
import { buildTestApp, freshPostgres, TEST_STORE } from '../helpers.js';

test('a newly migrated PostgreSQL store has no table analyzed as empty', async (t) => {
  if (TEST_STORE !== 'postgres') return t.skip('SQLite has no planner statistics until ANALYZE');
  const url = await freshPostgres(t, { migrated: false });
  await buildTestApp(t, { DATABASE_URL: url });
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  const { rows } = await c
    .query<{ relname: string }>(
      `select c.relname from pg_class c join pg_namespace n on n.oid = c.relnamespace
       where n.nspname = 'public' and c.relkind = 'r' and c.reltuples = 0 order by 1`,
    )
    .finally(() => c.end());
  assert.deepEqual(
    rows.map((r) => r.relname),
    [],
  );
});
