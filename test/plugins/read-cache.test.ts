// Tests the read cache (src/plugins/read-cache.ts) through HTTP: a repeated list request answers
// the same bytes, and never a stale page: a write through the API, a write by another instance on
// the same store, a change of role, or a refused write leave every list exactly as a fresh query
// would show it. On PostgreSQL nothing is cached; the same assertions hold.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { buildTestApp, call, createStaff, freshDatabaseUrl } from '../helpers.js';

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
  const guest = await call(app, 'POST', '/guests', { token: admin.token, body: { name: 'Shared Guest' } });
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
