// OWASP API4:2023 Unrestricted Resource Consumption: every size a client controls has a limit,
// and going over it is a 4xx in the envelope, never a 500, a hang or a crash. Elsewhere:
// 413 over 1 MiB and 10k/200k-deep JSON on a setting in test/plugins/errors.test.ts; bulk over
// 100 items in test/modules/{guests,tasks,conversations}.test.ts ("takes 1 to 100 items"); the
// request-rate limits in test/plugins/rate-limit.test.ts and the login limit in test/auth/.
import assert from 'node:assert/strict';
import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { assertError } from '../fixtures.js';
import { buildTestApp, call, createStaff } from '../helpers.js';
import { operations, requiredQuery, world } from './support.js';

test('limit=101, limit=0 and page=0 are 400 on every list endpoint; limit=100 is the most a page holds', async (t) => {
  const w = await world(t);
  const lists = (await operations(w.app)).filter(
    (o) => o.method === 'GET' && o.op.parameters?.some((p: { name: string }) => p.name === 'limit'),
  );
  assert.ok(lists.length >= 6, `only ${lists.length} list endpoints`);
  for (const o of lists) {
    // Required parameters (a search's q) set, so only the paging is wrong.
    const required = requiredQuery(o.op);
    const url = `${o.path.replace('{id}', w.own.alice.conversation)}?${required === '' ? '' : `${required}&`}`;
    for (const q of ['limit=101', 'limit=0', 'limit=1000000', 'page=0', 'limit=1e3', 'limit=100&limit=101']) {
      assertError(
        await call(w.app, 'GET', `${url}${q}`, { token: w.admin.token }),
        400,
        'VALIDATION_ERROR',
        `${url}${q}`,
      );
    }
    // The control needs an existing parent: only conversations' messages have one here.
    if (o.path.includes('{id}') && !o.path.startsWith('/api/v1/conversations/')) continue;
    const max = await call(w.app, 'GET', `${url}limit=100`, { token: w.admin.token });
    assert.equal(max.status, 200, url);
    assert.equal(max.body.meta.limit, 100);
  }
});

test('a body over 1 MiB is 413 on a bulk endpoint too, before any item is read', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const items = Array.from({ length: 100 }, (_, i) => ({ name: `G${i}`, notes: 'x'.repeat(10_500) }));
  const res = await call(app, 'POST', '/guests/bulk', { token: admin.token, body: { items } });
  assertError(res, 413, 'PAYLOAD_TOO_LARGE');
  assert.equal((await call(app, 'GET', '/guests', { token: admin.token })).body.meta.total, 0);
});

test('bulk bodies over 100 items are 400 on every bulk endpoint, and nothing is created', async (t) => {
  const w = await world(t);
  const item = (i: number) => ({
    name: `G${i}`,
    title: `T${i}`,
    department: 'housekeeping',
    id: w.own.alice.conversation,
    status: 'open',
  });
  const bulks = (await operations(w.app)).filter((o) => o.path.endsWith('/bulk'));
  assert.equal(bulks.length, 4);
  for (const o of bulks) {
    const res = await call(w.app, o.method, o.path, {
      token: w.admin.token,
      body: { items: Array.from({ length: 101 }, (_, i) => item(i)) },
    });
    assertError(res, 400, 'VALIDATION_ERROR', `${o.method} ${o.path}`);
  }
  assert.equal((await call(w.app, 'GET', '/guests', { token: w.admin.token })).body.meta.total, 2);
});

test('10,000-deep JSON is 400 on every endpoint that takes a body, nested in a field or a bulk item', async (t) => {
  const w = await world(t);
  const deep = `${'['.repeat(10_000)}${']'.repeat(10_000)}`;
  const deepObj = `${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}`;
  const writes = (await operations(w.app)).filter((o) => o.op.requestBody !== undefined);
  assert.ok(writes.length >= 12, `only ${writes.length} writes`);
  for (const o of writes) {
    const url = o.path.replace('{id}', w.own.alice.conversation).replace('{key}', 'custom.deep');
    for (const body of [`{"items":[${deep}]}`, `{"name":${deepObj}}`, deep]) {
      const res = await call(w.app, o.method, url, { token: w.admin.token, body });
      assertError(res, 400, 'VALIDATION_ERROR', `${o.method} ${url}`);
    }
  }
});

test('strings and arrays over their documented limits are 400, not stored', async (t) => {
  const w = await world(t);
  const { app, admin } = w;
  const cases: [string, string, unknown][] = [
    ['POST', '/guests', { name: 'x'.repeat(201) }],
    ['POST', '/guests', { name: 'ok', tags: Array.from({ length: 51 }, (_, i) => `t${i}`) }],
    ['POST', '/guests', { name: 'ok', notes: 'x'.repeat(10_001) }],
    ['POST', `/conversations/${w.own.alice.conversation}/messages`, { content: 'x'.repeat(4097) }],
    ['POST', '/knowledge', { title: 't', content: 'x'.repeat(50_001) }],
    ['PUT', '/settings/custom.big', { value: 'x'.repeat(70_000) }],
    ['PUT', '/settings/departments', { value: Array.from({ length: 101 }, (_, i) => `d${i}`) }],
    ['GET', `/guests?search=${'x'.repeat(201)}`, undefined],
    ['GET', `/knowledge?search=${'x'.repeat(201)}`, undefined],
  ];
  for (const [method, url, body] of cases) {
    assertError(
      await call(app, method as 'POST', url, { token: admin.token, body }),
      400,
      'VALIDATION_ERROR',
      `${method} ${url.slice(0, 60)}`,
    );
  }
  assert.equal((await call(app, 'GET', '/guests', { token: admin.token })).body.meta.total, 2);
});

/** Sends a raw request to a listening app and resolves its status, headers and body. */
function raw(
  port: number,
  headers: Record<string, string>,
): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/api/v1/auth/me', headers }, (res) => {
      let body = '';
      res.on('data', (d) => {
        body += d;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

test('a 20 KB header is 431 in the JSON envelope (Node refuses it before Fastify sees the request)', async (t) => {
  const app = await buildTestApp(t);
  await app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = app.server.address() as AddressInfo;
  const res = await raw(port, { 'x-filler': 'x'.repeat(20 * 1024) });
  assert.equal(res.status, 431);
  assert.match(String(res.headers['content-type']), /^application\/json/);
  const body = JSON.parse(res.body);
  assert.deepEqual(body, {
    success: false,
    error: { code: 'HEADERS_TOO_LARGE', message: 'The request headers are larger than 16 KiB' },
  });
  assert.ok(res.headers['x-request-id']);
  // The server is still answering afterwards.
  const ok = await raw(port, {});
  assert.equal(ok.status, 401);
});
