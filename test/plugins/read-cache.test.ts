// Tests the read cache (src/plugins/read-cache.ts) through HTTP: a repeated list request answers
// the same bytes, and never a stale page: a write through the API, a write by another instance on
// the same store, a change of role, or a refused write leave every list exactly as a fresh query
// would show it. On PostgreSQL nothing is cached; the same assertions hold.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { buildTestApp, call, createStaff, freshDatabaseUrl, TEST_STORE } from '../helpers.js';

const ENV = { RATE_LIMIT_STANDARD: '1000' };

async function raw(app: FastifyInstance, token: string, url: string, headers: Record<string, string> = {}) {
  const res = await app.inject({
    method: 'GET',
    url: `/api/v1${url}`,
    headers: { authorization: `Bearer ${token}`, ...headers },
  });
  assert.equal(res.statusCode, 200, res.body);
  assert.match(String(res.headers['content-type']), /^application\/json; charset=utf-8$/);
  return res;
}

test('a repeated list answers the same page; every write shows at once', async (t) => {
  const app = await buildTestApp(t, ENV);
  const admin = await createStaff(app, 'admin');
  const guest = await call(app, 'POST', '/guests', { token: admin.token, body: { name: 'Cached Guest' } });
  const cnv = await call(app, 'POST', '/conversations', {
    token: admin.token,
    body: { guestId: guest.data.id, channel: 'web' },
  });
  const url = '/conversations?status=open&limit=20';
  const first = await raw(app, admin.token, url);
  const second = await raw(app, admin.token, url);
  assert.equal(second.body, first.body);
  assert.ok(second.headers['x-ratelimit-remaining'] !== first.headers['x-ratelimit-remaining'], 'each request counted');
  assert.notEqual(second.headers['x-request-id'], first.headers['x-request-id']);
  assert.equal(JSON.parse(first.body).meta.total, 1);

  // A message changes the conversation's counters and order.
  await call(app, 'POST', `/conversations/${cnv.data.id}/messages`, { token: admin.token, body: { content: 'Hi' } });
  const afterMessage = JSON.parse((await raw(app, admin.token, url)).body);
  assert.equal(afterMessage.data[0].messageCount, 1);
  const messages = JSON.parse((await raw(app, admin.token, `/conversations/${cnv.data.id}/messages`)).body);
  assert.equal(messages.meta.total, 1);
  await call(app, 'POST', `/conversations/${cnv.data.id}/messages`, { token: admin.token, body: { content: 'Again' } });
  const messages2 = JSON.parse((await raw(app, admin.token, `/conversations/${cnv.data.id}/messages`)).body);
  assert.equal(messages2.meta.total, 2);

  // A guest rename shows in the conversation list (a joined column).
  await call(app, 'PATCH', `/guests/${guest.data.id}`, { token: admin.token, body: { name: 'Renamed Guest' } });
  const renamed = JSON.parse((await raw(app, admin.token, url)).body);
  assert.equal(renamed.data[0].guest.name, 'Renamed Guest');
  const search = JSON.parse((await raw(app, admin.token, '/guests?search=renamed')).body);
  assert.equal(search.meta.total, 1);

  // Closing it removes it from the open list.
  await call(app, 'PATCH', `/conversations/${cnv.data.id}`, { token: admin.token, body: { status: 'closed' } });
  assert.equal(JSON.parse((await raw(app, admin.token, url)).body).meta.total, 0);

  // A refused write changes nothing, and the list still answers.
  const refused = await call(app, 'POST', '/guests', { token: admin.token, body: { name: '' } });
  assert.equal(refused.status, 400);
  assert.equal(JSON.parse((await raw(app, admin.token, '/guests?search=renamed')).body).meta.total, 1);

  // Cache-Control: no-cache asks for a fresh read; the answer is the same.
  const fresh = await raw(app, admin.token, url, { 'cache-control': 'no-cache' });
  assert.equal(fresh.body, (await raw(app, admin.token, url)).body);
});

test('a write by another instance on the same store shows at once', async (t) => {
  const env = { ...ENV, DATABASE_URL: await freshDatabaseUrl(t) };
  const a = await buildTestApp(t, env);
  const b = await buildTestApp(t, env);
  const admin = await createStaff(a, 'admin');
  const list = async () => JSON.parse((await raw(a, admin.token, '/guests?limit=100')).body);
  assert.equal((await list()).meta.total, 0);
  assert.equal((await list()).meta.total, 0);
  for (let i = 1; i <= 3; i++) {
    const made = await call(b, 'POST', '/guests', { token: admin.token, body: { name: `From B ${i}` } });
    assert.equal(made.status, 201);
    const seen = await list();
    assert.equal(seen.meta.total, i);
    assert.ok(seen.data.some((g: { id: string }) => g.id === made.data.id));
  }
  await b.close();
  await a.close();
});

test('each caller gets their own page: staff see their own conversations, also after a reassignment', async (t) => {
  const app = await buildTestApp(t, ENV);
  const admin = await createStaff(app, 'admin');
  const ann = await createStaff(app, 'staff');
  const bob = await createStaff(app, 'staff');
  const guest = await call(app, 'POST', '/guests', {
    token: admin.token,
    body: { name: 'Shared Guest', phone: '+15550100006' },
  });
  const cnv = await call(app, 'POST', '/conversations', {
    token: admin.token,
    body: { guestId: guest.data.id, channel: 'sms', assignee: ann.id },
  });
  const ids = async (token: string) =>
    JSON.parse((await raw(app, token, '/conversations')).body).data.map((c: { id: string }) => c.id);
  assert.deepEqual(await ids(ann.token), [cnv.data.id]);
  assert.deepEqual(await ids(bob.token), []);
  assert.deepEqual(await ids(ann.token), [cnv.data.id]);
  assert.deepEqual(await ids(bob.token), []);
  await call(app, 'PATCH', `/conversations/${cnv.data.id}`, { token: admin.token, body: { assignee: bob.id } });
  assert.deepEqual(await ids(ann.token), []);
  assert.deepEqual(await ids(bob.token), [cnv.data.id]);
  assert.deepEqual(await ids(admin.token), [cnv.data.id]);
});

test('a kept page carries the same headers as a fresh read, on every cached route', async (t) => {
  const app = await buildTestApp(t, ENV);
  const admin = await createStaff(app, 'admin');
  const guest = await call(app, 'POST', '/guests', { token: admin.token, body: { name: 'Header Guest' } });
  const cnv = await call(app, 'POST', '/conversations', {
    token: admin.token,
    body: { guestId: guest.data.id, channel: 'web', content: 'Hello' },
  });
  const routes = app.readCache.routes.filter((r) => r.startsWith('GET '));
  assert.deepEqual(
    routes.map((r) => r.slice(4)).sort(),
    [
      '/api/v1/conversations',
      '/api/v1/conversations/:id/messages',
      '/api/v1/guests',
      '/api/v1/knowledge',
      '/api/v1/tasks',
    ],
    'the routes this test covers are the ones cached',
  );
  // Values that differ per request by design; every other header must be equal, name and value.
  const perRequest = new Set(['x-request-id', 'x-ratelimit-remaining', 'date']);
  const comparable = (headers: Record<string, unknown>) =>
    Object.fromEntries(Object.entries(headers).filter(([name]) => !perRequest.has(name)));
  for (const route of routes) {
    const url = route.slice(4).replace('/api/v1', '').replace(':id', cnv.data.id);
    const fresh = await raw(app, admin.token, url, { 'cache-control': 'no-cache' });
    await raw(app, admin.token, url);
    const hitsBefore = app.readCache.hits;
    const kept = await raw(app, admin.token, url);
    // SQLite keeps pages; PostgreSQL cannot tell its version cheaply and keeps none.
    assert.equal(app.readCache.hits - hitsBefore, TEST_STORE === 'sqlite' ? 1 : 0, `${url} answered from the cache`);
    assert.equal(kept.body, fresh.body, url);
    assert.deepEqual(comparable(kept.headers), comparable(fresh.headers), url);
    assert.deepEqual(Object.keys(kept.headers).sort(), Object.keys(fresh.headers).sort(), url);
  }
});
