// Idempotency-Key (docs/integrations.md): a retried request makes its change once and replays the first
// answer; the answer is written in the transaction of the change.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { assertError, insertGuest, openConversation } from '../fixtures.js';
import { buildTestApp, call, createStaff, freshDatabaseUrl } from '../helpers.js';

const withKey = (key: string) => ({ 'idempotency-key': key });

async function messageCount(app: FastifyInstance, token: string, conversationId: string) {
  const res = await call(app, 'GET', `/conversations/${conversationId}/messages?limit=100`, { token });
  assert.equal(res.status, 200, res.raw.body);
  return res.data.length as number;
}

test('a repeated guest POST returns the first guest with Idempotent-Replayed; another body is a 422', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const body = { name: 'Ana Retry', email: 'ana.retry@example.test' };
  const first = await call(app, 'POST', '/guests', { token: admin.token, body, headers: withKey('guest-1') });
  assert.equal(first.status, 201, first.raw.body);
  assert.equal(first.headers['idempotent-replayed'], undefined);
  const again = await call(app, 'POST', '/guests', { token: admin.token, body, headers: withKey('guest-1') });
  assert.equal(again.status, 201, again.raw.body);
  assert.equal(again.headers['idempotent-replayed'], 'true');
  assert.equal(again.raw.body, first.raw.body, 'the same bytes');
  const list = await call(app, 'GET', '/guests', { token: admin.token });
  assert.equal(list.body.meta.total, 1);

  const other = await call(app, 'POST', '/guests', {
    token: admin.token,
    body: { name: 'Someone Else' },
    headers: withKey('guest-1'),
  });
  assertError(other, 422, 'IDEMPOTENCY_KEY_REUSED');
  // Keys belong to their caller: another admin's same key is another request.
  const other_admin = await createStaff(app, 'admin');
  const theirs = await call(app, 'POST', '/guests', {
    token: other_admin.token,
    body: { name: 'Their Guest' },
    headers: withKey('guest-1'),
  });
  assert.equal(theirs.status, 201, theirs.raw.body);
  assert.equal(theirs.headers['idempotent-replayed'], undefined);
});

test('a bad Idempotency-Key is a 400 naming it; an error answer is not kept, so a retry runs again', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  for (const key of ['x'.repeat(256), 'with space', 'ünïcode']) {
    const res = await call(app, 'POST', '/guests', {
      token: admin.token,
      body: { name: 'Ana' },
      headers: { 'idempotency-key': key },
    });
    assertError(res, 400, 'VALIDATION_ERROR', key);
    assert.equal(res.body.error.details[0].field, 'Idempotency-Key');
  }
  const task = { title: 'Towels', department: 'no-such-department' };
  const bad = await call(app, 'POST', '/tasks', { token: admin.token, body: task, headers: withKey('task-1') });
  assertError(bad, 400, 'VALIDATION_ERROR');
  const good = await call(app, 'POST', '/tasks', {
    token: admin.token,
    body: { ...task, department: 'housekeeping' },
    headers: withKey('task-1'),
  });
  assert.equal(good.status, 201, good.raw.body);
});

test('twenty parallel retries of one message send store one message', async (t) => {
  const app = await buildTestApp(t, { RATE_LIMIT_STANDARD: '1000' });
  const admin = await createStaff(app, 'admin');
  const guestId = await insertGuest(app);
  const conversation = await openConversation(app, admin.token, { guestId, channel: 'web' });
  const send = () =>
    call(app, 'POST', `/conversations/${conversation.id}/messages`, {
      token: admin.token,
      body: { content: 'Your room is ready', type: 'note' },
      headers: withKey('send-1'),
    });
  const answers = await Promise.all(Array.from({ length: 20 }, send));
  const created = answers.filter((r) => r.status === 201);
  assert.ok(created.length >= 1, answers.map((r) => r.status).join(','));
  for (const r of answers) {
    assert.ok(r.status === 201 || r.status === 409, `${r.status} ${r.raw.body}`);
    if (r.status === 409) {
      assertError(r, 409, 'CONFLICT');
      assert.equal(r.headers['retry-after'], '1');
    }
  }
  assert.equal(new Set(created.map((r) => r.data.id)).size, 1, 'every 201 names the same message');
  assert.equal(await messageCount(app, admin.token, conversation.id), 1);
  const later = await send();
  assert.equal(later.status, 201);
  assert.equal(later.headers['idempotent-replayed'], 'true');
  assert.equal(later.data.id, created[0]!.data.id);
});

test('concurrent retries on two instances of one store make one change', async (t) => {
  const env = { DATABASE_URL: await freshDatabaseUrl(t), RATE_LIMIT_STANDARD: '1000' };
  const a = await buildTestApp(t, env);
  const b = await buildTestApp(t, env);
  t.after(async () => {
    await b.close();
    await a.close();
  });
  const admin = await createStaff(a, 'admin');
  const guestId = await insertGuest(a);
  const conversation = await openConversation(a, admin.token, { guestId, channel: 'web' });
  const send = (app: FastifyInstance) =>
    call(app, 'POST', `/conversations/${conversation.id}/messages`, {
      token: admin.token,
      body: { content: 'Checkout is at noon', type: 'note' },
      headers: withKey('two-instances'),
    });
  const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => send(i % 2 === 0 ? a : b)));
  for (const r of answers) assert.ok(r.status === 201 || r.status === 409, `${r.status} ${r.raw.body}`);
  assert.equal(await messageCount(a, admin.token, conversation.id), 1);
  const replayed = await send(b);
  assert.equal(replayed.status, 201);
  assert.equal(replayed.headers['idempotent-replayed'], 'true');
});

test('the bulk PATCH takes a key; an answer older than 24 hours is purged and the key runs again', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const guestId = await insertGuest(app);
  const conversation = await openConversation(app, admin.token, { guestId, channel: 'web' });
  const bulk = () =>
    call(app, 'PATCH', '/conversations/bulk', {
      token: admin.token,
      body: {
        items: [
          { id: conversation.id, status: 'closed' },
          { id: 'cnv_missing', status: 'closed' },
        ],
      },
      headers: withKey('bulk-1'),
    });
  const first = await bulk();
  assert.equal(first.status, 200, first.raw.body);
  assert.deepEqual(
    first.data.map((i: { success: boolean }) => i.success),
    [true, false],
  );
  const again = await bulk();
  assert.equal(again.headers['idempotent-replayed'], 'true');
  assert.equal(again.raw.body, first.raw.body);

  const guest = () =>
    call(app, 'POST', '/guests', { token: admin.token, body: { name: 'Old Key' }, headers: withKey('old') });
  const one = await guest();
  await app.ctx.store.db
    .updateTable('idempotency_keys')
    .set({ expires_at: new Date(Date.now() - 1000).toISOString() })
    .execute();
  const two = await guest();
  assert.equal(two.status, 201);
  assert.equal(two.headers['idempotent-replayed'], undefined);
  assert.notEqual(two.data.id, one.data.id);
});

test('an API key create replays its key; the stored answer is not readable in the store', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const create = () =>
    call(app, 'POST', '/api-keys', {
      token: admin.token,
      body: { name: 'PMS', scopes: ['guests:read'] },
      headers: withKey('key-1'),
    });
  const first = await create();
  const again = await create();
  assert.equal(again.data.key, first.data.key);
  const rows = await app.ctx.store.db.selectFrom('idempotency_keys').select('body').execute();
  assert.equal(rows.length, 1);
  assert.ok(!rows[0]!.body.includes(first.data.key.slice(-20)), 'the key is sealed');
});
