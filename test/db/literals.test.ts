// Tests the literals a statement sent with a COMMIT is written with (src/db/store.ts escapeLiteral):
// the same text as pg's own escapeLiteral, and on PostgreSQL each string read back unchanged.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sql } from 'kysely';
import pg from 'pg';
import { escapeLiteral } from '../../src/db/store.js';
import { buildTestApp, TEST_STORE } from '../helpers.js';

const STRINGS = [
  '',
  'plain',
  "it's",
  "''",
  'a\\b',
  "\\'",
  "O'Brien \\ room 12 \\\\n",
  'ünïcødé 🛎️ \n\t\r',
  JSON.stringify([{ type: 'message.created', data: { content: 'Welcome O\'Brien \\ "room" 4' } }]),
];

test("escapeLiteral writes every string as pg's escapeLiteral does", () => {
  for (const s of STRINGS) assert.equal(escapeLiteral(s), pg.escapeLiteral(s), s);
});

test('a string written as a literal reads back unchanged', async (t) => {
  if (TEST_STORE !== 'postgres') return t.skip('literals are written only on PostgreSQL');
  const app = await buildTestApp(t);
  for (const s of STRINGS) {
    const r = await sql<{ v: string }>`select ${sql.raw(escapeLiteral(s))}::text as v`.execute(app.ctx.store.db);
    assert.equal(r.rows[0]!.v, s);
  }
});
