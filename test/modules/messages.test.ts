import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance } from 'fastify';
import { newId } from '../../src/lib/ids.js';
import { insertGuest, openConversation } from '../fixtures.js';
import { assertPagesAgree, buildTestApp, call, createStaff, settledMessage } from '../helpers.js';

/** A guest's message through the web widget's route (docs/channels.md); returns the receipt. */
async function inbound(app: FastifyInstance, token: string, body: object) {
  const res = await call(app, 'POST', '/channels/web/inbound', { token, body });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.data;
}

async function setup(t: TestContext) {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const guestId = await insertGuest(app);
  const open = (body: Record<string, unknown> = {}) =>
    openConversation(app, admin.token, { guestId, channel: 'email', ...body });
  const send = (id: string, body: unknown, token = admin.token) =>
    call(app, 'POST', `/conversations/${id}/messages`, { token, body });
  const get = (id: string, token = admin.token) => call(app, 'GET', `/conversations/${id}`, { token });
  return { app, admin, guestId, open, send, get };
}

test('messages are listed oldest first and paginated with meta', async (t) => {
  const { app, admin, open, send } = await setup(t);
  const c = await open({ content: 'message 0' });
  for (let i = 1; i < 5; i++) assert.equal((await send(c.id, { content: `message ${i}` })).status, 201);

  const all = await call(app, 'GET', `/conversations/${c.id}/messages`, { token: admin.token });
  assert.equal(all.status, 200);
  assert.deepEqual(
    all.data.map((m: { content: string }) => m.content),
    ['message 0', 'message 1', 'message 2', 'message 3', 'message 4'],
  );
  assert.deepEqual(all.body.meta, { page: 1, limit: 20, total: 5, pages: 1, nextCursor: null });

  const page2 = await call(app, 'GET', `/conversations/${c.id}/messages?page=2&limit=2`, { token: admin.token });
  assert.deepEqual(
    page2.data.map((m: { content: string }) => m.content),
    ['message 2', 'message 3'],
  );
  assert.deepEqual(
    { ...page2.body.meta, nextCursor: typeof page2.body.meta.nextCursor },
    { page: 2, limit: 2, total: 5, pages: 3, nextCursor: 'string' },
  );

  const past = await call(app, 'GET', `/conversations/${c.id}/messages?page=9&limit=2`, { token: admin.token });
  assert.equal(past.status, 200);
  assert.deepEqual(past.data, []);

  const contents = all.data.map((m: { content: string }) => m.content);
  await assertPagesAgree(
    app,
    admin.token,
    `/conversations/${c.id}/messages`,
    contents,
    (m: { content: string }) => m.content,
  );

  const bad = await call(app, 'GET', `/conversations/${c.id}/messages?limit=500`, { token: admin.token });
  assert.equal(bad.status, 400);
  const missing = await call(app, 'GET', `/conversations/${newId('cnv')}/messages`, { token: admin.token });
  assert.equal(missing.status, 404);
});

test('messages of another conversation are not listed', async (t) => {
  const { app, admin, open } = await setup(t);
  const a = await open({ content: 'for a' });
  await open({ content: 'for b' });
  const res = await call(app, 'GET', `/conversations/${a.id}/messages`, { token: admin.token });
  assert.deepEqual(
    res.data.map((m: { content: string }) => m.content),
    ['for a'],
  );
});

test('sending a text queues it for the guest and updates the conversation counters', async (t) => {
  const { app, admin, open, send, get } = await setup(t);
  const c = await open();
  await sleep(3);
  const res = await send(c.id, { content: 'Breakfast is served until 10:30' });
  assert.equal(res.status, 201);
  const m = res.data;
  assert.match(m.id, /^msg_[0-9a-z]{26}$/);
  assert.deepEqual(
    { ...m, id: undefined, createdAt: undefined },
    {
      id: undefined,
      conversationId: c.id,
      direction: 'outbound',
      type: 'text',
      content: 'Breakfast is served until 10:30',
      sender: { type: 'staff', id: admin.id },
      deliveryStatus: 'queued',
      externalId: null,
      error: null,
      sentAt: null,
      deliveredAt: null,
      readAt: null,
      attachments: [],
      createdAt: undefined,
    },
  );
  // No e-mail provider is configured in this app: delivery settles the text as failed, and says why.
  const settled = await settledMessage(app, admin.token, c.id, m.id);
  assert.equal(settled.deliveryStatus, 'failed');
  assert.equal(settled.error.code, 'CHANNEL_NOT_CONFIGURED');
  assert.equal(settled.sentAt, null);
  const after = (await get(c.id)).data;
  assert.equal(after.messageCount, 1);
  assert.equal(after.lastMessageAt, m.createdAt);
  assert.equal(after.updatedAt, m.createdAt);
  assert.ok(after.lastMessageAt > c.lastMessageAt);
});

test('an internal note is stored as delivered, because it is never sent to the guest, and still counts', async (t) => {
  const { open, send, get } = await setup(t);
  const c = await open({ content: 'Welcome!' });
  await sleep(3);
  const res = await send(c.id, { content: 'Guest is a VIP; upgrade if possible', type: 'note' });
  assert.equal(res.status, 201);
  assert.equal(res.data.type, 'note');
  assert.equal(res.data.direction, 'outbound');
  assert.equal(res.data.deliveryStatus, 'delivered');
  const after = (await get(c.id)).data;
  assert.equal(after.messageCount, 2);
  assert.equal(after.lastMessageAt, res.data.createdAt);
});

test('a message must have 1 to 4096 characters of content, a known type and no other fields', async (t) => {
  const { open, send, get } = await setup(t);
  const c = await open();
  const bad = [
    [{ content: '' }, 'content'],
    [{ content: 'x'.repeat(4097) }, 'content'],
    [{}, 'content'],
    [{ content: 42 }, 'content'],
    [{ content: 'hi', type: 'sms' }, 'type'],
    [{ content: 'hi', direction: 'inbound' }, 'direction'],
  ] as const;
  for (const [body, field] of bad) {
    const res = await send(c.id, body);
    assert.equal(res.status, 400, JSON.stringify(body).slice(0, 60));
    assert.equal(res.body.error.code, 'VALIDATION_ERROR');
    assert.deepEqual(
      res.body.error.details.map((d: { field: string }) => d.field),
      [field],
    );
  }
  assert.equal((await get(c.id)).data.messageCount, 0, 'no rejected message was stored');

  const longest = await send(c.id, { content: 'é'.repeat(4096) });
  assert.equal(longest.status, 201);
  assert.equal(longest.data.content.length, 4096);
  const missing = await send(newId('cnv'), { content: 'hello' });
  assert.equal(missing.status, 404);
});

test('a staff member reads and writes only the messages of conversations assigned to them', async (t) => {
  const { app, admin, open, send } = await setup(t);
  const staff = await createStaff(app, 'staff');
  const other = await createStaff(app, 'staff');
  const mine = await open({ assignee: staff.id, content: 'hi' });
  const theirs = await open({ assignee: other.id, content: 'hello' });

  const read = await call(app, 'GET', `/conversations/${mine.id}/messages`, { token: staff.token });
  assert.equal(read.status, 200);
  const sent = await send(mine.id, { content: 'On my way' }, staff.token);
  assert.equal(sent.status, 201);
  assert.deepEqual(sent.data.sender, { type: 'staff', id: staff.id });

  const readOther = await call(app, 'GET', `/conversations/${theirs.id}/messages`, { token: staff.token });
  assert.equal(readOther.status, 403);
  assert.equal(readOther.body.error.code, 'FORBIDDEN');
  const sendOther = await send(theirs.id, { content: 'sneaky' }, staff.token);
  assert.equal(sendOther.status, 403);
  const theirMessages = await call(app, 'GET', `/conversations/${theirs.id}/messages`, { token: admin.token });
  assert.equal(theirMessages.data.length, 1, 'the refused message was not stored');

  const missing = await call(app, 'GET', `/conversations/${newId('cnv')}/messages`, { token: staff.token });
  assert.equal(missing.status, 404);
  assert.equal((await send(newId('cnv'), { content: 'x' }, staff.token)).status, 404);
});

test('an inbound message from the guest reopens a closed conversation and is counted', async (t) => {
  const { app, admin, guestId, open, get } = await setup(t);
  const c = await open({ channel: 'web', content: 'Anything else?' });
  await call(app, 'PATCH', `/conversations/${c.id}`, { token: admin.token, body: { status: 'closed' } });
  await sleep(3);

  const m = (await inbound(app, admin.token, { guestId, content: 'Yes, more towels please' })).message;
  const after = (await get(c.id)).data;
  assert.equal(after.status, 'open');
  assert.equal(after.messageCount, 2);
  assert.equal(after.lastMessageAt, m.createdAt);
  assert.ok(after.lastMessageAt > c.lastMessageAt);

  const list = await call(app, 'GET', `/conversations/${c.id}/messages`, { token: admin.token });
  assert.deepEqual(list.data[1], {
    id: m.id,
    conversationId: c.id,
    direction: 'inbound',
    type: 'text',
    content: 'Yes, more towels please',
    sender: { type: 'guest', id: guestId },
    deliveryStatus: 'received',
    externalId: null,
    error: null,
    sentAt: null,
    deliveredAt: null,
    readAt: null,
    attachments: [],
    createdAt: m.createdAt,
  });
});

test('an inbound message leaves an open or pending conversation in its status', async (t) => {
  const { app, admin, guestId, open, get } = await setup(t);
  const other = await insertGuest(app);
  const opened = await open({ channel: 'web' });
  const pending = await open({ channel: 'web', guestId: other });
  await call(app, 'PATCH', `/conversations/${pending.id}`, { token: admin.token, body: { status: 'pending' } });
  for (const g of [guestId, other]) await inbound(app, admin.token, { guestId: g, content: 'ping' });
  assert.equal((await get(opened.id)).data.status, 'open');
  assert.equal((await get(pending.id)).data.status, 'pending');
  assert.equal((await get(pending.id)).data.messageCount, 1);
});

test('an inbound message naming an unknown guest is refused and stores nothing', async (t) => {
  const { app, admin } = await setup(t);
  const res = await call(app, 'POST', '/channels/web/inbound', {
    token: admin.token,
    body: { guestId: newId('gst'), content: 'hello?' },
  });
  assert.equal(res.status, 400);
  assert.equal(res.body.error.details[0].field, 'guestId');
  assert.equal((await call(app, 'GET', '/conversations', { token: admin.token })).body.meta.total, 0);
});

test('messages sent at the same time keep a stable order and an exact count', async (t) => {
  const { app, admin, open, send, get } = await setup(t);
  const c = await open();
  const results = await Promise.all(Array.from({ length: 10 }, (_, i) => send(c.id, { content: `n${i}` })));
  assert.ok(results.every((r) => r.status === 201));
  assert.equal((await get(c.id)).data.messageCount, 10);
  const list = await call(app, 'GET', `/conversations/${c.id}/messages`, { token: admin.token });
  const ids = list.data.map((m: { id: string }) => m.id);
  assert.deepEqual(ids, [...ids].sort(), 'oldest first, ties broken by id');
});

test('a conversation whose latest message is ahead of this clock gets each new message 1 ms after it', async (t) => {
  const { app, admin, open, send, get } = await setup(t);
  const c = await open({ content: 'first' });
  // Another instance whose clock runs ahead wrote the latest message a minute from now.
  const ahead = new Date(Date.now() + 60_000);
  await app.ctx.store.db
    .updateTable('conversations')
    .set({ last_message_at: ahead.toISOString() })
    .where('id', '=', c.id)
    .execute();
  const a = await send(c.id, { content: 'after the clock' });
  const b = await send(c.id, { content: 'and once more' });
  assert.equal(a.status, 201);
  assert.equal(a.data.createdAt, new Date(ahead.getTime() + 1).toISOString());
  assert.equal(b.data.createdAt, new Date(ahead.getTime() + 2).toISOString());
  const after = await get(c.id);
  assert.equal(after.data.lastMessageAt, b.data.createdAt);
  assert.equal(after.data.updatedAt, b.data.createdAt);
  assert.equal(after.data.messageCount, 3);
  const listed = await call(app, 'GET', `/conversations/${c.id}/messages`, { token: admin.token });
  assert.deepEqual(
    listed.data.map((m: { content: string }) => m.content),
    ['first', 'after the clock', 'and once more'],
  );
});
