// Injection: SQL metacharacters in every filter of every list endpoint (and in path ids) answer
// 200 or 400, never 500, and leave the data as it was. Filters are read from the OpenAPI document,
// so a new filter is covered the day it is added. That `%` and `_` in a guest search match only
// themselves is test/modules/guests.test.ts; hostile full-text searches, knowledge.test.ts.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { call } from '../helpers.js';
import { assertNoInternals, fill, operations, totals, world } from './support.js';

const PAYLOADS = [
  "'",
  '"',
  ';',
  '--',
  '%',
  '_',
  '\\',
  '/*',
  '*/',
  '\u0000',
  "' OR '1'='1",
  "' OR 1=1 --",
  '"; DROP TABLE guests; --',
  "'); DELETE FROM tasks; --",
  '%%',
  '_%_',
  "\\'",
  '\\%',
  "1' UNION SELECT password_hash FROM staff --",
  "admin'--",
  '$1',
  '?',
  ':name',
  '`',
  "' || (SELECT 1) || '",
  '*',
  'NEAR(a b)',
  '"unterminated',
  '\u00a0\u200b',
];

test('SQL metacharacters in every string filter of every list endpoint answer 200 or 400, never 500, and change nothing', async (t) => {
  const w = await world(t);
  const before = await totals(w);
  const lists = (await operations(w.app)).filter(
    (o) => o.method === 'GET' && o.op.parameters?.some((p: { in: string }) => p.in === 'query'),
  );
  let filters = 0;
  let requests = 0;
  for (const o of lists) {
    const params = (o.op.parameters as { in: string; name: string; schema: { type?: string } }[]).filter(
      (p) => p.in === 'query' && p.name !== 'page' && p.name !== 'limit',
    );
    for (const p of params) {
      filters++;
      for (const payload of PAYLOADS) {
        // Every payload as admin; the classic ones also as a staff member (whose lists add an owner filter).
        const asStaff = Array.isArray(o.roles) && o.roles.includes('staff') && PAYLOADS.indexOf(payload) < 12;
        const callers = asStaff ? [w.admin, w.alice] : [w.admin];
        // A list under another resource's id (not created here) may answer 404 once validation passed.
        const ok =
          o.path.includes('{id}') && !o.path.startsWith('/api/v1/conversations/') ? [200, 400, 404] : [200, 400];
        for (const who of callers) {
          const url = `${fill(o.path, { id: w.own.alice.conversation })}?${p.name}=${encodeURIComponent(payload)}`;
          const res = await call(w.app, 'GET', url, { token: who.token });
          requests++;
          assert.ok(ok.includes(res.status), `${url}: ${res.status} ${res.raw.body}`);
          assertNoInternals(res.raw.body, url, payload);
          if (res.status === 200) {
            // A literal match only: nothing here names a record, so nothing but an exact hit returns.
            // A report's summary is one object, not a list.
            for (const row of Array.isArray(res.data) ? res.data : [res.data]) assert.ok(typeof row === 'object', url);
          }
        }
      }
    }
  }
  assert.ok(filters >= 12, `only ${filters} filters`);
  assert.ok(requests > 500);
  assert.deepEqual(await totals(w), before);
});

test('a guest search for a metacharacter finds only guests whose text holds it literally', async (t) => {
  const w = await world(t);
  const names = ["O'Brien", 'Semi;Colon', 'Back\\Slash', 'Percent%Sign', 'Under_Score', 'Dash--Dash', 'Star/*Comment'];
  for (const name of names) {
    assert.equal((await call(w.app, 'POST', '/guests', { token: w.admin.token, body: { name } })).status, 201);
  }
  for (const [needle, expected] of [
    ["'", ["O'Brien"]],
    [';', ['Semi;Colon']],
    ['\\', ['Back\\Slash']],
    ['%', ['Percent%Sign']],
    ['_', ['Under_Score']],
    ['--', ['Dash--Dash']],
    ['/*', ['Star/*Comment']],
  ] as const) {
    const res = await call(w.app, 'GET', `/guests?search=${encodeURIComponent(needle)}`, { token: w.admin.token });
    assert.equal(res.status, 200);
    assert.deepEqual(
      res.data.map((g: { name: string }) => g.name),
      expected,
      needle,
    );
  }
});

test('metacharacters in path ids and setting keys are 404 (or 400 for NUL), never 500', async (t) => {
  const w = await world(t);
  const before = await totals(w);
  const ops = (await operations(w.app)).filter((o) => o.path.includes('{'));
  for (const o of ops) {
    for (const payload of PAYLOADS) {
      const url = fill(o.path, { id: `x${payload}`, key: `custom.${payload}` });
      const res = await call(w.app, o.method, url, {
        token: w.admin.token,
        body: o.op.requestBody ? { value: 1, status: 'open', content: 'x', title: 't' } : undefined,
      });
      assert.ok([400, 404].includes(res.status), `${o.method} ${url}: ${res.status} ${res.raw.body}`);
      assertNoInternals(res.raw.body, url, `x${payload}`, `custom.${payload}`);
    }
  }
  assert.deepEqual(await totals(w), before);
});
