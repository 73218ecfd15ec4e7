// Prototype pollution: `__proto__`, `constructor` and `prototype` as keys in bodies (top level,
// nested, in setting values and bulk items), in query strings and as path values are refused or
// stored as plain data, and never reach Object.prototype. The first three body cases are in
// test/plugins/errors.test.ts ("__proto__ and constructor.prototype bodies are 400").
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { call } from '../helpers.js';
import { totals, world } from './support.js';

const polluted = () => {
  const probe = {} as Record<string, unknown>;
  return probe.polluted !== undefined || probe.isAdmin !== undefined || Object.keys(Object.prototype).length > 0;
};

test('poisoned keys in bodies are 400 (or inert data) on every kind of write, and Object.prototype stays clean', async (t) => {
  const w = await world(t);
  const { app, admin, own } = w;
  const before = await totals(w);
  const poison = [
    '{"__proto__":{"polluted":true}}',
    '{"constructor":{"prototype":{"polluted":true}}}',
    '{"a":{"b":{"__proto__":{"polluted":true}}}}',
    '{"a":[{"constructor":{"prototype":{"isAdmin":true}}}]}',
  ];
  const wrap = (inner: string): [string, string, string][] => [
    ['POST', '/guests', `{"name":"P","tags":["x"],"notes":null,"x":${inner}}`],
    ['POST', '/guests', inner.replace(/^\{/, '{"name":"P",')],
    ['PATCH', `/guests/${own.alice.guest}`, inner.replace(/^\{/, '{"notes":"n",')],
    ['POST', '/guests/bulk', `{"items":[{"name":"ok"},${inner}]}`],
    ['POST', '/guests/bulk', `{"__proto__":{"polluted":true},"items":[{"name":"ok"}]}`],
    ['POST', '/tasks/bulk', `{"items":[${inner.replace(/^\{/, '{"title":"t","department":"housekeeping",')}]}`],
    ['PATCH', '/conversations/bulk', `{"items":[${inner.replace(/^\{/, `{"id":"${own.alice.conversation}",`)}]}`],
    ['PUT', '/settings/custom.poison', `{"value":${inner}}`],
    ['PUT', '/settings/hotel', `{"value":${inner.replace(/^\{/, '{"name":"H","timezone":"UTC","locale":"en",')}}`],
    ['POST', '/staff', inner.replace(/^\{/, '{"name":"P","email":"p@hotel.test","role":"staff",')],
    ['POST', '/auth/login', inner.replace(/^\{/, '{"email":"p@hotel.test","password":"x",')],
  ];
  for (const inner of poison) {
    for (const [method, url, body] of wrap(inner)) {
      const res = await call(app, method as 'POST', url, { token: admin.token, body });
      assert.equal(polluted(), false, `${method} ${url} polluted Object.prototype`);
      const what = `${method} ${url} ${body}: ${res.status} ${res.raw.body}`;
      // Bulk items stand alone: the poisoned item fails, the others are applied.
      if (url.endsWith('/bulk') && !body.startsWith('{"__proto__"')) {
        assert.equal(res.status, 200, what);
        const items = JSON.parse(body).items as unknown[];
        const failed = res.data.filter((r: { success: boolean }) => !r.success);
        assert.deepEqual(
          failed.map((r: { index: number; error: { code: string } }) => [r.index, r.error.code]),
          [[items.length - 1, 'VALIDATION_ERROR']],
          what,
        );
        continue;
      }
      assert.equal(res.status, 400, what);
      assert.equal(res.body.error.code, 'VALIDATION_ERROR');
    }
  }
  // Nothing changed but the good bulk items: one guest named "ok" per poisoned variant.
  const after = await totals(w);
  const created = (after['/guests'] as string[]).filter((g) => !(before['/guests'] as string[]).includes(g));
  assert.equal(created.length, poison.length);
  assert.deepEqual({ ...after, '/guests': [] }, { ...before, '/guests': [] });
});

test('"prototype" and "constructor" alone are ordinary keys: stored and returned as data, inert', async (t) => {
  const w = await world(t);
  const value = { prototype: { polluted: true }, constructor: 'x', nested: [{ prototype: 1 }] };
  const put = await call(w.app, 'PUT', '/settings/custom.shapes', { token: w.admin.token, body: { value } });
  assert.equal(put.status, 200, put.raw.body);
  const got = await call(w.app, 'GET', '/settings/custom.shapes', { token: w.admin.token });
  assert.deepEqual(got.data.value, value);
  const tags = await call(w.app, 'POST', '/guests', {
    token: w.admin.token,
    body: { name: '__proto__', tags: ['__proto__', 'constructor', 'prototype'], notes: 'constructor.prototype' },
  });
  assert.equal(tags.status, 201);
  assert.deepEqual(tags.data.tags, ['__proto__', 'constructor', 'prototype']);
  const byTag = await call(w.app, 'GET', '/guests?tag=__proto__', { token: w.admin.token });
  assert.equal(byTag.body.meta.total, 1);
  assert.equal(polluted(), false);
});

test('poisoned names in query strings and paths are 400 or 404, never a lookup on the prototype', async (t) => {
  const w = await world(t);
  const { app, admin } = w;
  for (const q of [
    '__proto__[polluted]=1',
    '__proto__.polluted=1',
    'constructor[prototype][polluted]=1',
    '__proto__=x',
    'constructor=x',
    'prototype=x',
    'hasOwnProperty=x',
    'toString=x',
  ]) {
    for (const list of ['/guests', '/tasks', '/conversations', '/staff', '/knowledge']) {
      const res = await call(app, 'GET', `${list}?${q}`, { token: admin.token });
      assert.equal(res.status, 400, `${list}?${q}: ${res.raw.body}`);
      assert.equal(res.body.error.code, 'VALIDATION_ERROR');
    }
  }
  // Setting keys that name Object.prototype members are unknown keys, not inherited ones.
  for (const key of ['__proto__', 'constructor', 'prototype', 'hasOwnProperty', 'toString', 'valueOf']) {
    for (const method of ['GET', 'PUT', 'DELETE'] as const) {
      const res = await call(app, method, `/settings/${key}`, {
        token: admin.token,
        body: method === 'PUT' ? { value: { polluted: true } } : undefined,
      });
      assert.equal(res.status, 404, `${method} /settings/${key}: ${res.raw.body}`);
    }
  }
  const custom = await call(app, 'PUT', '/settings/custom.__proto__', {
    token: admin.token,
    body: { value: { polluted: true } },
  });
  assert.equal(custom.status, 200, 'custom.__proto__ is just a name');
  const list = await call(app, 'GET', '/settings', { token: admin.token });
  assert.ok(list.data.some((s: { key: string }) => s.key === 'custom.__proto__'));
  assert.equal(polluted(), false);
});
