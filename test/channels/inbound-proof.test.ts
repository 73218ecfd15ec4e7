// Inbound is trusted only as far as it is proven (CONTRACT §16): a widget's externalId belongs to
// its caller, an e-mail joins a thread only from that thread's guest, our Message-IDs cannot be
// guessed, and messages for numbers that are not ours are acknowledged and ignored.
import assert from 'node:assert/strict';
import test from 'node:test';
import type { FastifyInstance } from 'fastify';
import { buildTestApp, call, createStaff, type TestUser } from '../helpers.js';
import { INBOUND_ENV } from './signing.js';

async function setup(t: test.TestContext, env: Record<string, string> = {}) {
  const app = await buildTestApp(t, {
    ...INBOUND_ENV,
    CHANNELS_DRY_RUN: 'true',
    CHANNEL_POLL_INTERVAL_MS: '20',
    ...env,
  });
  const admin = await createStaff(app, 'admin');
  return { app, admin };
}

async function apiKey(app: FastifyInstance, admin: TestUser, name: string) {
  const res = await call(app, 'POST', '/api-keys', {
    token: admin.token,
    body: { name, scopes: ['channels:inbound'] },
  });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.data.key as string;
}

async function messagesOf(app: FastifyInstance, admin: TestUser, conversationId: string) {
  const res = await call(app, 'GET', `/conversations/${conversationId}/messages?limit=100`, { token: admin.token });
  assert.equal(res.status, 200);
  return res.data as { id: string; content: string; deliveryStatus: string; externalId: string | null }[];
}

test("a widget's externalId is its caller's: another caller's same id is a new message, a repeat answers the id only", async (t) => {
  const { app, admin } = await setup(t);
  const widgetA = await apiKey(app, admin, 'widget A');
  const widgetB = await apiKey(app, admin, 'widget B');
  const post = (token: string, body: object) => call(app, 'POST', '/channels/web/inbound', { token, body });
  const vip = {
    guest: { name: 'VIP', email: 'vip@example.test' },
    content: 'My door code is 4711',
    externalId: 'w-42',
  };
  const first = await post(widgetA, vip);
  assert.equal(first.status, 201, JSON.stringify(first.body));

  // Another key, and an admin's token, naming the same id: each its own new message.
  const mallory = { guest: { name: 'Mallory', email: 'mallory@example.test' }, content: 'hi', externalId: 'w-42' };
  const other = await post(widgetB, mallory);
  assert.equal(other.status, 201, JSON.stringify(other.body));
  assert.doesNotMatch(other.raw.body, /4711|vip@example/);
  assert.notEqual(other.data.message.id, first.data.message.id);
  assert.equal(other.data.message.content, 'hi');
  assert.notEqual(other.data.conversationId, first.data.conversationId);
  const byAdmin = await post(admin.token, { ...mallory, content: 'from the admin' });
  assert.equal(byAdmin.status, 201, JSON.stringify(byAdmin.body));
  assert.notEqual(byAdmin.data.message.id, other.data.message.id);

  // The same caller repeating: its message's id, nothing else.
  const again = await post(widgetA, vip);
  assert.equal(again.status, 200);
  assert.deepEqual(again.body, { success: true, data: { duplicate: true, message: { id: first.data.message.id } } });
  const againB = await post(widgetB, { ...mallory, content: 'changed' });
  assert.deepEqual(againB.body, { success: true, data: { duplicate: true, message: { id: other.data.message.id } } });

  assert.deepEqual(
    (await messagesOf(app, admin, first.data.conversationId)).map((m) => m.content),
    ['My door code is 4711'],
  );
  assert.deepEqual(
    (await messagesOf(app, admin, other.data.conversationId)).map((m) => m.content),
    ['hi', 'from the admin'],
  );
});
