// Inbound is trusted only as far as it is proven (docs/decisions.md, Channels): a widget's externalId belongs to
// its caller, an e-mail joins a thread only from that thread's guest, our Message-IDs cannot be
// guessed, and messages for numbers that are not ours are acknowledged and ignored.
import assert from 'node:assert/strict';
import test from 'node:test';
import type { FastifyInstance } from 'fastify';
import { loadConfig } from '../../src/config.js';
import { emailMessageId } from '../../src/modules/channels/providers.js';
import { insertGuest } from '../fixtures.js';
import { buildTestApp, call, createStaff, JWT_SECRET, type TestUser } from '../helpers.js';
import {
  email,
  INBOUND_ENV,
  metaPayload,
  postEmail,
  postMeta,
  postTwilio,
  TWILIO_SMS_NUMBER,
  TWILIO_WHATSAPP_NUMBER,
} from './signing.js';

const EMAIL_ENV = { SMTP_URL: 'smtp://127.0.0.1:9', EMAIL_FROM: 'Front Desk <desk@hotel.example.test>' };

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

async function guestByPhone(app: FastifyInstance, admin: TestUser, phone: string) {
  const res = await call(app, 'GET', `/guests?search=${encodeURIComponent(phone)}`, { token: admin.token });
  return (res.data as { id: string; phone: string | null }[]).find((g) => g.phone === phone);
}

/** An outbound text on a new conversation of the channel, once it is sent (dry run): its ids. */
async function sentText(app: FastifyInstance, admin: TestUser, channel: string, guestId?: string) {
  const gid = guestId ?? (await insertGuest(app));
  const c = await call(app, 'POST', '/conversations', { token: admin.token, body: { guestId: gid, channel } });
  assert.equal(c.status, 201, JSON.stringify(c.body));
  const m = await call(app, 'POST', `/conversations/${c.data.id}/messages`, {
    token: admin.token,
    body: { content: 'Your room is ready' },
  });
  assert.equal(m.status, 201, JSON.stringify(m.body));
  for (let i = 0; i < 300; i++) {
    const got = await call(app, 'GET', `/conversations/${c.data.id}/messages/${m.data.id}`, { token: admin.token });
    if (got.data.deliveryStatus === 'sent') {
      return { conversationId: c.data.id as string, messageId: m.data.id as string, externalId: got.data.externalId };
    }
    await new Promise((r) => setTimeout(r, 10));
  }
  assert.fail('the text was never sent');
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

test("an e-mail joins the thread it names only when its sender is that conversation's guest", async (t) => {
  const { app, admin } = await setup(t, EMAIL_ENV);
  const vip = await postEmail(
    app,
    email({ from: 'VIP <vip@example.test>', subject: 'Suite', messageId: '<vip-1@mail.example.test>', text: 'Hi' }),
  );
  assert.equal(vip.status, 201, JSON.stringify(vip.body));
  const vipConversation = vip.data.conversationId as string;
  const answer = await call(app, 'POST', `/conversations/${vipConversation}/messages`, {
    token: admin.token,
    body: { content: 'Your door code is 4711' },
  });
  assert.equal(answer.status, 201);
  let hotelId: string | null = null;
  for (let i = 0; i < 300 && hotelId === null; i++) {
    hotelId = (await messagesOf(app, admin, vipConversation)).find((m) => m.id === answer.data.id)!.externalId;
    if (hotelId === null) await new Promise((r) => setTimeout(r, 10));
  }
  assert.ok(hotelId, 'the answer was sent with its Message-ID');

  // Someone else answering the hotel's Message-ID: routed as if it named none (a new conversation).
  const hijack = await postEmail(
    app,
    email({
      from: 'mallory@example.test',
      subject: 'Re: Suite',
      messageId: '<mal-1@evil.example.test>',
      inReplyTo: hotelId,
      references: `<vip-1@mail.example.test> ${hotelId}`,
      text: 'What was that code again?',
    }),
  );
  assert.equal(hijack.status, 201, JSON.stringify(hijack.body));
  assert.notEqual(hijack.data.conversationId, vipConversation);
  assert.equal(hijack.data.conversationCreated, true);
  // Naming the guest's own Message-ID: into the sender's own latest e-mail conversation.
  const again = await postEmail(
    app,
    email({
      from: 'Mallory@Example.test',
      messageId: '<mal-2@evil.example.test>',
      references: '<vip-1@mail.example.test>',
      text: 'Hello?',
    }),
  );
  assert.equal(again.status, 201);
  assert.equal(again.data.conversationId, hijack.data.conversationId);
  assert.deepEqual(
    (await messagesOf(app, admin, vipConversation)).map((m) => m.content),
    ['Hi', 'Your door code is 4711'],
    "nothing reached the VIP's conversation",
  );

  // The guest, in any case, answering the same Message-ID: joins the thread.
  const reply = await postEmail(
    app,
    email({ from: 'VIP@Example.Test', messageId: '<vip-2@mail.example.test>', inReplyTo: hotelId, text: 'Thanks' }),
  );
  assert.equal(reply.status, 201);
  assert.equal(reply.data.conversationId, vipConversation);
});

test('outbound Message-IDs carry 128 unguessable bits, the same for a message every time it is sent', async (t) => {
  const { app, admin } = await setup(t, EMAIL_ENV);
  const guestId = await insertGuest(app);
  const a = await sentText(app, admin, 'email', guestId);
  const b = await sentText(app, admin, 'email', guestId);
  for (const s of [a, b]) {
    assert.match(s.externalId, /^<[0-9a-f]{32}@hotel\.example\.test>$/);
    assert.ok(!s.externalId.includes(s.messageId.slice(4)), 'not derived visibly from the message id');
    // A resend (after a crash) computes it again from the message id: the same Message-ID.
    assert.equal(emailMessageId(app.ctx.config.channels, s.messageId), s.externalId);
  }
  assert.notEqual(a.externalId, b.externalId);
  // Keyed: another deployment's secret gives another Message-ID for the same message id.
  const other = loadConfig({ ...INBOUND_ENV, ...EMAIL_ENV, JWT_SECRET: `${JWT_SECRET}-another-deployment` });
  assert.notEqual(emailMessageId(other.channels, a.messageId), a.externalId);
});

test('WhatsApp messages and statuses for another phone_number_id are acknowledged and ignored', async (t) => {
  const { app, admin } = await setup(t);
  const message = (id: string, from: string) => ({
    from,
    id,
    timestamp: '1764061200',
    type: 'text',
    text: { body: 'x' },
  });
  const foreign = await postMeta(
    app,
    metaPayload({ messages: [message('wamid.X1', '447700900140')] }, '999000111222333'),
  );
  assert.equal(foreign.status, 200, JSON.stringify(foreign.body));
  assert.deepEqual(foreign.data, { messages: 0, duplicates: 0, statuses: 0, skipped: 1 });
  assert.equal(await guestByPhone(app, admin, '+447700900140'), undefined, 'nothing stored');
  // A change naming no number at all is not ours either.
  const payload = metaPayload({ messages: [message('wamid.X2', '447700900140')] });
  delete (payload.entry[0]!.changes[0]!.value as { metadata?: unknown }).metadata;
  assert.deepEqual((await postMeta(app, payload)).data, { messages: 0, duplicates: 0, statuses: 0, skipped: 1 });
  assert.equal(await guestByPhone(app, admin, '+447700900140'), undefined, 'nothing stored');

  const ours = await postMeta(app, metaPayload({ messages: [message('wamid.X3', '447700900140')] }));
  assert.deepEqual(ours.data, { messages: 1, duplicates: 0, statuses: 0, skipped: 0 });
  const guest = (await guestByPhone(app, admin, '+447700900140'))!;
  const sent = await sentText(app, admin, 'whatsapp', guest.id);
  const read = { id: sent.externalId, status: 'read', timestamp: '1764061300', recipient_id: '447700900140' };
  const late = await postMeta(app, metaPayload({ statuses: [read] }, '999000111222333'));
  assert.deepEqual(late.data, { messages: 0, duplicates: 0, statuses: 0, skipped: 1 });
  assert.equal((await messagesOf(app, admin, sent.conversationId))[0]!.deliveryStatus, 'sent');
  assert.equal((await postMeta(app, metaPayload({ statuses: [read] }))).data.statuses, 1);
  assert.equal((await messagesOf(app, admin, sent.conversationId))[0]!.deliveryStatus, 'read');
});

test('a Twilio message to another number, or a status from another number, is acknowledged and ignored', async (t) => {
  const { app, admin } = await setup(t);
  const cases: Record<string, string>[] = [
    { MessageSid: 'SMf1', From: '+447700900141', To: '+15559999999', Body: 'to a sister hotel' },
    { MessageSid: 'SMf2', From: '+447700900141', Body: 'no To at all' },
    { MessageSid: 'SMf3', From: '+447700900141', To: TWILIO_WHATSAPP_NUMBER, Body: 'SMS to the WhatsApp number' },
    { MessageSid: 'SMf4', From: 'whatsapp:+447700900141', To: 'whatsapp:+15559999999', Body: 'WhatsApp elsewhere' },
    { MessageSid: 'SMf5', From: 'whatsapp:+447700900141', To: TWILIO_SMS_NUMBER, Body: 'WhatsApp, To not whatsapp:' },
  ];
  for (const params of cases) {
    const res = await postTwilio(app, 'inbound', params);
    assert.equal(res.status, 200, res.raw.body);
    assert.match(res.raw.body, /<Response><\/Response>/);
  }
  assert.equal(await guestByPhone(app, admin, '+447700900141'), undefined, 'nothing stored');
  const sms = { MessageSid: 'SMo1', From: '+447700900141', To: TWILIO_SMS_NUMBER, Body: 'SMS to us' };
  const wa = {
    MessageSid: 'SMo2',
    From: 'whatsapp:+447700900141',
    To: `whatsapp:${TWILIO_WHATSAPP_NUMBER}`,
    Body: 'WA',
  };
  for (const params of [sms, wa]) assert.equal((await postTwilio(app, 'inbound', params)).status, 200);
  const guest = await guestByPhone(app, admin, '+447700900141');
  assert.ok(guest, 'messages to our numbers are stored');

  const sent = await sentText(app, admin, 'sms', guest.id);
  const status = { MessageSid: sent.externalId, MessageStatus: 'delivered' };
  assert.equal((await postTwilio(app, 'status', { ...status, From: '+15559999999' })).status, 204);
  assert.equal((await messagesOf(app, admin, sent.conversationId))[0]!.deliveryStatus, 'sent');
  assert.equal((await postTwilio(app, 'status', { ...status, From: TWILIO_SMS_NUMBER })).status, 204);
  assert.equal((await messagesOf(app, admin, sent.conversationId))[0]!.deliveryStatus, 'delivered');
});
