// Tests what a list page costs, by the store's own account rather than by timing (docs/decisions.md,
// src/db/paginate.ts): on SQLite by the query plan (a deep page's ids come from the ordering index
// alone and its rows by primary key; a cursor page seeks to its key), on PostgreSQL by EXPLAIN
// ANALYZE (a page past the end reads no row of the table; a deep page reads full rows for the
// page alone).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CompiledQuery } from 'kysely';
import type { Executor } from '../../src/db/executor.js';
import type { Prepared } from '../../src/db/prepared.js';
import { listConversations } from '../../src/modules/conversations/repository.js';
import { buildTestApp, call, createStaff, freshPostgres, TEST_STORE } from '../helpers.js';

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  Plans?: PlanNode[];
}

/** Rows each PostgreSQL plan node read from `relation`, summed over its loops. */
function rowsRead(node: PlanNode, relation: string): number {
  const own = node['Relation Name'] === relation ? (node['Actual Rows'] ?? 0) * (node['Actual Loops'] ?? 0) : 0;
  return own + (node.Plans ?? []).reduce((n, p) => n + rowsRead(p, relation), 0);
}

async function explain(x: Executor, q: Prepared<never, unknown>, params: Record<string, unknown>) {
  const { sql, parameters } = q.statement(x, params as never);
  if (x.dialect === 'sqlite') {
    const r = await x.executeQuery(CompiledQuery.raw(`explain query plan ${sql}`, parameters));
    return { sqlite: (r.rows as { detail: string }[]).map((row) => row.detail), pg: null };
  }
  const r = await x.executeQuery(CompiledQuery.raw(`explain (analyze, format json) ${sql}`, parameters));
  const json = (r.rows[0] as { 'QUERY PLAN': unknown })['QUERY PLAN'];
  const plan = (typeof json === 'string' ? JSON.parse(json) : json) as { Plan: PlanNode }[];
  return { sqlite: null, pg: plan[0]!.Plan };
}

test('a page past the end reads no row, a deep page only index entries to its offset, a cursor page seeks', async (t) => {
  // A new copy of the migrated database on PostgreSQL: plans depend on the tables' sizes on disk.
  const fresh: Record<string, string> =
    TEST_STORE === 'postgres' ? { DATABASE_URL: await freshPostgres(t, { migrated: true, pooled: false }) } : {};
  const app = await buildTestApp(t, { RATE_LIMIT_STANDARD: '10000', ...fresh });
  const admin = await createStaff(app, 'admin');
  for (let i = 0; i < 40; i++) {
    const g = await call(app, 'POST', '/guests', { token: admin.token, body: { name: `Cost ${i}` } });
    await call(app, 'POST', '/conversations', { token: admin.token, body: { guestId: g.data.id, channel: 'web' } });
  }
  const x = app.ctx.store;
  const shown = { now: new Date().toISOString(), today: new Date().toISOString().slice(0, 10) };
  const s = listConversations.statementsOf({ status: 'open', ...shown });
  const inputs = { status: 'open', ...shown, limit: 5, offset: 0, k0: '2100-01-01T00:00:00.000Z', k1: 'cnv_z' };

  const past = await explain(x, s.deep as never, { ...inputs, offset: 40 });
  const deep = await explain(x, s.deep as never, { ...inputs, offset: 30 });
  const after = await explain(x, s.after as never, inputs);
  if (TEST_STORE === 'sqlite') {
    // The ids from the covering index (no table row read), the page's rows by primary key.
    assert.ok(
      deep.sqlite!.includes('SEARCH c USING COVERING INDEX conversations_status_idx (status=?)'),
      String(deep.sqlite),
    );
    assert.ok(
      deep.sqlite!.includes('SEARCH c USING INDEX sqlite_autoindex_conversations_1 (id=?)'),
      String(deep.sqlite),
    );
    assert.ok(!deep.sqlite!.some((d) => d.startsWith('SCAN c')), 'never a scan of the table');
    assert.deepEqual(past.sqlite, deep.sqlite, 'the same statement: its guard skips the index past the total');
    assert.ok(
      after.sqlite!.includes('SEARCH c USING INDEX conversations_status_idx (status=? AND (last_message_at,id)<(?,?))'),
      String(after.sqlite),
    );
  } else {
    assert.equal(rowsRead(past.pg!, 'conversations'), 0, 'past the end: nothing read from conversations');
    // The page's full rows are fetched by primary key for its 5 ids alone (the deferred join);
    // how the ids are found is the planner's choice for a table this small.
    const byKey = (n: PlanNode): PlanNode[] => [
      ...(n['Index Name'] === 'conversations_pkey' ? [n] : []),
      ...(n.Plans ?? []).flatMap(byKey),
    ];
    assert.deepEqual(
      byKey(deep.pg!).map((n) => (n['Actual Rows'] ?? 0) * (n['Actual Loops'] ?? 0)),
      [5],
      JSON.stringify(deep.pg),
    );
  }
  // And through HTTP: past the end is empty with the right total.
  const res = await call(app, 'GET', '/conversations?status=open&limit=5&page=9', { token: admin.token });
  assert.deepEqual(res.data, []);
  assert.equal(res.body.meta.total, 40);
  assert.equal(res.body.meta.nextCursor, null);
});
