// Tests how timestamps come back from the store: PostgreSQL's timestamptz text is rewritten to the
// API's ISO form without Date on its usual UTC form (src/db/store.ts, pgTimestamptz), and must give
// exactly what Date gives for every value; through HTTP, what was written is what is read back.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { sql } from 'kysely';
import { pgTimestamptz } from '../../src/db/store.js';
import { buildTestApp, call, createStaff, TEST_STORE } from '../helpers.js';

/** PostgreSQL's text form in UTC: microseconds with trailing zeros dropped, no fraction when zero. */
function pgText(ms: number, micros: number): string {
  const iso = new Date(ms).toISOString();
  const fraction = `${iso.slice(20, 23)}${String(micros).padStart(3, '0')}`.replace(/0+$/, '');
  return `${iso.slice(0, 10)} ${iso.slice(11, 19)}${fraction === '' ? '' : `.${fraction}`}+00`;
}

test('a UTC timestamptz in every form PostgreSQL writes reads as Date reads it', () => {
  const instant = fc.integer({ min: Date.UTC(1000, 0, 1), max: Date.UTC(9999, 11, 31, 23, 59, 59, 999) });
  fc.assert(
    fc.property(instant, fc.integer({ min: 0, max: 999 }), (ms, micros) => {
      const text = pgText(ms, micros);
      assert.equal(pgTimestamptz(text), new Date(text).toISOString(), text);
      assert.equal(pgTimestamptz(text), new Date(ms).toISOString(), text);
    }),
    { numRuns: 2000 },
  );
});

test('other offsets and forms are read by Date, and a value Date refuses still throws', () => {
  for (const text of ['2026-11-24 05:28:09.362778+01', '2026-11-24 04:28:09-03:30', '12026-01-01 00:00:00+00']) {
    assert.equal(pgTimestamptz(text), new Date(text).toISOString(), text);
  }
  assert.throws(() => pgTimestamptz('infinity'), RangeError);
});

test('timestamps with microseconds read from the store are the instants written, in ISO form', async (t) => {
  const app = await buildTestApp(t);
  if (TEST_STORE === 'postgres') {
    const r = await sql<{ a: string; b: string; c: string }>`
      select '2026-11-24 04:28:09.362778+00'::timestamptz as a,
             '2026-01-02 03:04:05+00'::timestamptz as b,
             '2026-06-30 23:59:59.9+02'::timestamptz as c`.execute(app.ctx.store.db);
    assert.deepEqual(r.rows[0], {
      a: '2026-11-24T04:28:09.362Z',
      b: '2026-01-02T03:04:05.000Z',
      c: '2026-06-30T21:59:59.900Z',
    });
  }
  // Through HTTP on either store: a created guest's timestamps are ISO strings that parse to themselves.
  const admin = await createStaff(app, 'admin');
  const created = await call(app, 'POST', '/api/v1/guests', { token: admin.token, body: { name: 'Ana Lima' } });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const read = await call(app, 'GET', `/api/v1/guests/${created.body.data.id}`, { token: admin.token });
  assert.equal(read.status, 200);
  for (const key of ['createdAt', 'updatedAt']) {
    const value = read.body.data[key];
    assert.equal(new Date(value).toISOString(), value, key);
    assert.equal(value, created.body.data[key], key);
  }
});
