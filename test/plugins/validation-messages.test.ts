// Validation messages speak to people: a pattern names what it wants, never the raw
// regular expression; a format says what a good value looks like; a rule's message names the field.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SETTINGS } from '../../src/modules/settings/registry.js';
import { buildTestApp, call, createStaff } from '../helpers.js';

type Json = Record<string, unknown>;

/** Every schema with a `pattern` under `value` (following $refs into `components`), by where it was seen. */
function patternsIn(value: unknown, components: Record<string, unknown>, where: string, out: Map<Json, string>) {
  const seen = new Set<string>();
  const walk = (v: unknown, at: string) => {
    if (Array.isArray(v)) {
      for (const x of v) walk(x, at);
      return;
    }
    if (v === null || typeof v !== 'object') return;
    const o = v as Json;
    if (typeof o.$ref === 'string') {
      const name = o.$ref.split('/').pop()!;
      if (!seen.has(name)) {
        seen.add(name);
        walk(components[name], `${at} > ${name}`);
      }
    }
    if (typeof o.pattern === 'string') out.set(o, at);
    for (const [k, x] of Object.entries(o)) if (k !== '$ref') walk(x, at);
  };
  walk(value, where);
}

test('every pattern a request is held to says in words what it wants', async (t) => {
  const app = await buildTestApp(t);
  const doc = (await call(app, 'GET', '/api/v1/openapi.json')).body as {
    paths: Record<string, Record<string, Json>>;
    components: { schemas: Record<string, unknown> };
  };
  const found = new Map<Json, string>();
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      patternsIn([op.parameters, op.requestBody], doc.components.schemas, `${method.toUpperCase()} ${path}`, found);
    }
  }
  for (const [key, def] of Object.entries(SETTINGS)) patternsIn(def.schema, {}, `setting ${key}`, found);
  assert.ok(found.size > 10);
  const unsaid = [...found].filter(([s]) => typeof s['x-pattern-message'] !== 'string');
  assert.deepEqual(
    unsaid.map(([s, at]) => `${at}: ${s.pattern}`),
    [],
  );
});

test('a bad value is answered in words: no regular expression, no bare format name, the field named', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const phone = await call(app, 'POST', '/guests', { token: admin.token, body: { name: 'Ana', phone: '12345' } });
  assert.equal(phone.status, 400);
  assert.equal(phone.body.error.details[0].message, 'must be an E.164 number like +14155550123');
  assert.equal(phone.body.error.message, 'phone: must be an E.164 number like +14155550123');
  const email = await call(app, 'POST', '/guests', { token: admin.token, body: { name: 'Ana', email: 'ana@' } });
  assert.equal(email.body.error.details[0].message, 'must be an e-mail address like ana@example.com');
  const due = await call(app, 'POST', '/tasks', {
    token: admin.token,
    body: { title: 'Towels', department: 'housekeeping', dueAt: 'tomorrow' },
  });
  assert.match(due.body.error.details[0].message, /^must be a date and time like 20\d\d-/);
  const hours = await call(app, 'PUT', '/settings/business_hours', {
    token: admin.token,
    body: { value: { timezone: 'Europe/Lisbon', days: { mon: [{ open: '9am', close: '17:00' }] } } },
  });
  assert.equal(hours.status, 400);
  assert.ok(
    hours.body.error.details.some((d: { field: string; message: string }) => /HH:MM/.test(d.message)),
    JSON.stringify(hours.body),
  );
  for (const res of [phone, email, due, hours]) {
    assert.doesNotMatch(JSON.stringify(res.body), /must match (pattern|format)|\^\\\\|\\\\d/, JSON.stringify(res.body));
  }
  // A rule no schema states names its field in the message too, not "Request data is invalid".
  const both = await call(app, 'POST', '/channels/web/inbound', {
    token: admin.token,
    body: {
      content: 'Hi',
      guest: { name: 'Visitor', email: 'v@example.com' },
      guestId: 'gst_01m00000000000000000000000',
    },
  });
  assert.equal(both.status, 400);
  assert.match(both.body.error.message, /^guestId: /);
});
