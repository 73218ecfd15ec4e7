// Tests the bound on PostgreSQL's named statements: every parameterised statement is prepared
// once per connection under a name, and a process meeting ever new statement texts (an IN list
// per length, a multi-row insert per row count) must not hold a statement per text for good in
// each connection: past MAX_NAMED_STATEMENTS texts, new ones run unnamed, with the same answers.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sql } from 'kysely';
import { MAX_NAMED_STATEMENTS } from '../../src/db/store.js';
import { buildTestApp, TEST_STORE } from '../helpers.js';

test('PostgreSQL names at most MAX_NAMED_STATEMENTS statement texts per connection', async (t) => {
  if (TEST_STORE !== 'postgres') return t.skip('SQLite keeps its own bounded statement cache');
  const app = await buildTestApp(t);
  const texts = MAX_NAMED_STATEMENTS + 50;
  const { prepared, answers } = await app.ctx.store.transact(async (tx) => {
    const answers: number[] = [];
    // One connection (the transaction's), each text new: `k` is written into the SQL.
    for (let k = 0; k < texts; k++) {
      const r = await sql<{ v: number }>`select ${k}::int + ${sql.lit(k)} as v`.execute(tx);
      answers.push(Number(r.rows[0]!.v));
    }
    const counted = await sql<{ n: string }>`select count(*) as n from pg_prepared_statements`.execute(tx);
    return { prepared: Number(counted.rows[0]!.n), answers };
  });
  assert.deepEqual(
    answers,
    Array.from({ length: texts }, (_, k) => 2 * k),
  );
  assert.ok(prepared > 0, 'statements are named');
  assert.ok(prepared <= MAX_NAMED_STATEMENTS, `${prepared} statements prepared on one connection`);
});
