// Guests reaching the hotel (docs/channels.md): signed Twilio, WhatsApp Cloud and e-mail requests and
// the web widget's backend, each landing once in the right conversation, forged ones changing
// nothing; provider statuses moving a text forward only; the auto reply outside business hours.
import assert from 'node:assert/strict';
import test from 'node:test';
import type { FastifyInstance } from 'fastify';
import { assertError, insertGuest } from '../fixtures.js';
import { buildTestApp, call, createStaff, type TestUser } from '../helpers.js';
import {
  EMAIL_SECRET,
  email,
  INBOUND_ENV,
  metaPayload,
  metaSign,
  postEmail,
  postMeta,
  postTwilio,
  TWILIO_SMS_NUMBER,
  TWILIO_WHATSAPP_NUMBER,
  twilioSign,
  VERIFY_TOKEN,
} from './signing.js';

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

async function guests(app: FastifyInstance, admin: TestUser) {
  return (await call(app, 'GET', '/guests?limit=100', { token: admin.token })).data as {
    id: string;
    name: string;
    phone: string | null;
    email: string | null;
  }[];
}

async function conversationsOf(app: FastifyInstance, admin: TestUser, guestId: string) {
  const all = (await call(app, 'GET', '/conversations?limit=100', { token: admin.token })).data as {
    id: string;
    guestId: string;
    channel: string;
    status: string;
    subject: string | null;
    messageCount: number;
  }[];
  return all.filter((c) => c.guestId === guestId);
}

async function messagesOf(app: FastifyInstance, admin: TestUser, conversationId: string) {
  const res = await call(app, 'GET', `/conversations/${conversationId}/messages?limit=100`, { token: admin.token });
  assert.equal(res.status, 200);
  return res.data as {
    id: string;
    direction: string;
    content: string;
    deliveryStatus: string;
    externalId: string | null;
    sender: { type: string; id: string | null };
    error: { code: string; message: string } | null;
    deliveredAt: string | null;
    readAt: string | null;
  }[];
}

/** Polls until the message has left `queued` (the dispatcher runs after commit); bounded. */
async function settled(app: FastifyInstance, admin: TestUser, conversationId: string, messageId: string) {
  for (let i = 0; i < 200; i++) {
    const res = await call(app, 'GET', `/conversations/${conversationId}/messages/${messageId}`, {
      token: admin.token,
    });
    if (res.data.deliveryStatus !== 'queued') return res.data;
    await new Promise((r) => setTimeout(r, 10));
  }
  assert.fail(`message ${messageId} stayed queued`);
}

async function outboundText(app: FastifyInstance, admin: TestUser, channel: string) {
  const guestId = await insertGuest(app);
  const c = await call(app, 'POST', '/conversations', { token: admin.token, body: { guestId, channel } });
  assert.equal(c.status, 201, JSON.stringify(c.body));
  const m = await call(app, 'POST', `/conversations/${c.data.id}/messages`, {
    token: admin.token,
    body: { content: 'Your room is ready' },
  });
  assert.equal(m.status, 201, JSON.stringify(m.body));
  const sent = await settled(app, admin, c.data.id, m.data.id);
  assert.equal(sent.deliveryStatus, 'sent');
  return { conversationId: c.data.id as string, messageId: m.data.id as string, externalId: sent.externalId as string };
}

test('a signed inbound SMS from an unknown number becomes a new guest with a conversation, once', async (t) => {
  const { app, admin } = await setup(t);
  const params = { MessageSid: 'SM0001', From: '+447700900123', To: '+15550000001', Body: 'Is breakfast included?' };
  const first = await postTwilio(app, 'inbound', params);
  assert.equal(first.status, 200, first.raw.body);
  assert.match(String(first.headers['content-type']), /text\/xml/);
  assert.match(first.raw.body, /<Response><\/Response>/);
  const again = await postTwilio(app, 'inbound', params);
  assert.equal(again.status, 200);

  const guest = (await guests(app, admin)).find((g) => g.phone === '+447700900123');
  assert.ok(guest, 'a guest with the sender phone exists');
  assert.equal(guest.name, '+447700900123');
  const convs = await conversationsOf(app, admin, guest.id);
  assert.equal(convs.length, 1);
  assert.equal(convs[0]!.channel, 'sms');
  assert.equal(convs[0]!.status, 'open');
  assert.equal(convs[0]!.messageCount, 1);
  const msgs = await messagesOf(app, admin, convs[0]!.id);
  assert.equal(msgs.length, 1, 'the repeated delivery was stored once');
  assert.equal(msgs[0]!.direction, 'inbound');
  assert.equal(msgs[0]!.deliveryStatus, 'received');
  assert.equal(msgs[0]!.content, 'Is breakfast included?');
  assert.deepEqual(msgs[0]!.sender, { type: 'guest', id: guest.id });
  assert.equal(msgs[0]!.externalId, 'SM0001');
});

test('a forged, missing or foreign Twilio signature is refused with nothing stored', async (t) => {
  const { app, admin } = await setup(t);
  const params = { MessageSid: 'SM0002', From: '+447700900124', Body: 'hi' };
  const url = 'https://hotel.example.test/api/v1/channels/twilio/inbound';
  const before = (await guests(app, admin)).length;
  for (const signature of [
    '',
    'bm90IGEgc2lnbmF0dXJl',
    twilioSign(url, params, 'another-token'),
    twilioSign(url, { ...params, Body: 'changed' }),
    twilioSign('https://evil.example/api/v1/channels/twilio/inbound', params),
  ]) {
    const res = await postTwilio(app, 'inbound', params, signature);
    assertError(res, 403, 'FORBIDDEN', `signature ${signature}`);
  }
  // Signed for other parameters than those sent: a tampered body.
  const tampered = await call(app, 'POST', '/api/v1/channels/twilio/inbound', {
    body: new URLSearchParams({ ...params, Body: 'tampered' }).toString(),
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': twilioSign(url, params) },
  });
  assertError(tampered, 403, 'FORBIDDEN');
  assert.equal((await guests(app, admin)).length, before, 'no guest was created');
});

test('Twilio routes refuse everything when Twilio is not configured', async (t) => {
  const app = await buildTestApp(t, { EMAIL_INBOUND_SECRET: EMAIL_SECRET });
  const res = await postTwilio(app, 'inbound', { MessageSid: 'SM1', From: '+447700900125', Body: 'x' });
  assertError(res, 403, 'FORBIDDEN');
  assert.match(res.body.error.message, /not configured/);
});

test('an inbound message from a known guest joins their latest conversation on the channel and reopens it', async (t) => {
  const { app, admin } = await setup(t);
  const guestId = await insertGuest(app);
  const phone = (await call(app, 'GET', `/guests/${guestId}`, { token: admin.token })).data.phone as string;
  const older = await call(app, 'POST', '/conversations', { token: admin.token, body: { guestId, channel: 'sms' } });
  const latest = await call(app, 'POST', '/conversations', { token: admin.token, body: { guestId, channel: 'sms' } });
  await call(app, 'PATCH', `/conversations/${latest.data.id}`, { token: admin.token, body: { status: 'closed' } });
  const web = await call(app, 'POST', '/conversations', { token: admin.token, body: { guestId, channel: 'web' } });
  assert.equal(web.status, 201);

  const res = await postTwilio(app, 'inbound', {
    MessageSid: 'SM0003',
    From: phone,
    To: TWILIO_SMS_NUMBER,
    Body: 'Back again',
  });
  assert.equal(res.status, 200);
  const convs = await conversationsOf(app, admin, guestId);
  const joined = convs.find((c) => c.id === latest.data.id)!;
  assert.equal(joined.status, 'open', 'the closed conversation reopened');
  assert.equal(joined.messageCount, 1);
  assert.equal(convs.find((c) => c.id === older.data.id)!.messageCount, 0);
  assert.equal(convs.length, 3, 'no new conversation');
  const events = await call(app, 'GET', '/events?limit=100', { token: admin.token });
  const types = (events.data as { type: string; data: { id: string } }[])
    .filter(
      (e) => e.data.id === latest.data.id || (e.data as { conversationId?: string }).conversationId === latest.data.id,
    )
    .map((e) => e.type);
  assert.ok(types.includes('message.created'));
  assert.ok(types.includes('conversation.status_changed'));
});

test('a WhatsApp message through Twilio lands in a WhatsApp conversation with the profile name', async (t) => {
  const { app, admin } = await setup(t);
  const res = await postTwilio(app, 'inbound', {
    MessageSid: 'SM0004',
    From: 'whatsapp:+447700900126',
    To: `whatsapp:${TWILIO_WHATSAPP_NUMBER}`,
    Body: 'Hola',
    ProfileName: 'Lucía',
    NumMedia: '1',
  });
  assert.equal(res.status, 200);
  const guest = (await guests(app, admin)).find((g) => g.phone === '+447700900126')!;
  assert.equal(guest.name, 'Lucía');
  const [conv] = await conversationsOf(app, admin, guest.id);
  assert.equal(conv!.channel, 'whatsapp');
  assert.equal((await messagesOf(app, admin, conv!.id))[0]!.content, 'Hola\n[1 attachment]');
});

test('signed Twilio statuses move a text forward only, forged ones change nothing', async (t) => {
  const { app, admin } = await setup(t);
  const { conversationId, messageId, externalId } = await outboundText(app, admin, 'sms');

  const forged = await postTwilio(app, 'status', { MessageSid: externalId, MessageStatus: 'read' }, 'Zm9yZ2Vk');
  assertError(forged, 403, 'FORBIDDEN');
  const delivered = await postTwilio(app, 'status', { MessageSid: externalId, MessageStatus: 'delivered' });
  assert.equal(delivered.status, 204);
  // Out of order: `sent` arrives after `delivered`; and a repeat of `delivered`.
  assert.equal((await postTwilio(app, 'status', { MessageSid: externalId, MessageStatus: 'sent' })).status, 204);
  assert.equal((await postTwilio(app, 'status', { MessageSid: externalId, MessageStatus: 'delivered' })).status, 204);
  let m = (await call(app, 'GET', `/conversations/${conversationId}/messages/${messageId}`, { token: admin.token }))
    .data;
  assert.equal(m.deliveryStatus, 'delivered');
  assert.ok(m.deliveredAt);
  assert.equal(m.readAt, null);
  // A failure after delivery is a late report of something that did not happen: ignored.
  await postTwilio(app, 'status', { MessageSid: externalId, MessageStatus: 'undelivered', ErrorCode: '30003' });
  m = (await call(app, 'GET', `/conversations/${conversationId}/messages/${messageId}`, { token: admin.token })).data;
  assert.equal(m.deliveryStatus, 'delivered');
  // Statuses of messages this API never sent are accepted and ignored.
  assert.equal((await postTwilio(app, 'status', { MessageSid: 'SMunknown', MessageStatus: 'delivered' })).status, 204);

  const updates = (await call(app, 'GET', '/events?types=message.updated&limit=100', { token: admin.token })).data as {
    data: { id: string; deliveryStatus: string };
  }[];
  assert.deepEqual(
    updates.filter((e) => e.data.id === messageId).map((e) => e.data.deliveryStatus),
    ['sent', 'delivered'],
    'one message.updated per forward step',
  );
});

test('a Twilio failure status marks a sent text failed with the error code', async (t) => {
  const { app, admin } = await setup(t);
  const { conversationId, messageId, externalId } = await outboundText(app, admin, 'sms');
  const res = await postTwilio(app, 'status', {
    MessageSid: externalId,
    MessageStatus: 'undelivered',
    ErrorCode: '30006',
  });
  assert.equal(res.status, 204);
  const m = (await call(app, 'GET', `/conversations/${conversationId}/messages/${messageId}`, { token: admin.token }))
    .data;
  assert.equal(m.deliveryStatus, 'failed');
  assert.equal(m.error.code, 'TWILIO_30006');
  assert.match(m.error.message, /undelivered/);
});

test("Meta's webhook verification answers the challenge only for the verify token", async (t) => {
  const { app } = await setup(t);
  const ok = await call(
    app,
    'GET',
    `/api/v1/channels/whatsapp/webhook?hub.mode=subscribe&hub.verify_token=${VERIFY_TOKEN}&hub.challenge=1158201444`,
  );
  assert.equal(ok.status, 200);
  assert.equal(ok.raw.body, '1158201444');
  const bad = await call(
    app,
    'GET',
    '/api/v1/channels/whatsapp/webhook?hub.mode=subscribe&hub.verify_token=wrong&hub.challenge=1158201444',
  );
  assertError(bad, 403, 'FORBIDDEN');
});

test('a signed WhatsApp Cloud webhook stores each message once and applies statuses', async (t) => {
  const { app, admin } = await setup(t);
  const msg = (id: string, body: string) => ({
    from: '447700900127',
    id,
    timestamp: '1764061200',
    type: 'text',
    text: { body },
  });
  const payload = metaPayload({
    contacts: [{ profile: { name: 'Kofi' }, wa_id: '447700900127' }],
    messages: [msg('wamid.A1', 'Can I check in early?'), msg('wamid.A2', 'Around 11?')],
  });
  const first = await postMeta(app, payload);
  assert.equal(first.status, 200, JSON.stringify(first.body));
  assert.deepEqual(first.data, { messages: 2, duplicates: 0, statuses: 0, skipped: 0 });
  const repeat = await postMeta(app, payload);
  assert.deepEqual(repeat.data, { messages: 0, duplicates: 2, statuses: 0, skipped: 0 });

  const guest = (await guests(app, admin)).find((g) => g.phone === '+447700900127')!;
  assert.equal(guest.name, 'Kofi');
  const [conv] = await conversationsOf(app, admin, guest.id);
  assert.equal(conv!.channel, 'whatsapp');
  assert.deepEqual(
    (await messagesOf(app, admin, conv!.id)).map((m) => m.content),
    ['Can I check in early?', 'Around 11?'],
  );

  // Statuses for a text the API sent (dry run: its id is known), read before delivered. The guest
  // wrote just now, so the 24-hour window is open.
  const answer = await call(app, 'POST', `/conversations/${conv!.id}/messages`, {
    token: admin.token,
    body: { content: 'Yes, from 11.' },
  });
  assert.equal(answer.status, 201, JSON.stringify(answer.body));
  const conversationId = conv!.id;
  const messageId = answer.data.id as string;
  const externalId = (await settled(app, admin, conversationId, messageId)).externalId as string;
  const status = (s: string, ts: string) => ({ id: externalId, status: s, timestamp: ts, recipient_id: '1' });
  const st = await postMeta(
    app,
    metaPayload({ statuses: [status('read', '1764061300'), status('delivered', '1764061250')] }),
  );
  assert.deepEqual(st.data, { messages: 0, duplicates: 0, statuses: 2, skipped: 0 });
  const m = (await call(app, 'GET', `/conversations/${conversationId}/messages/${messageId}`, { token: admin.token }))
    .data;
  assert.equal(m.deliveryStatus, 'read');
  assert.equal(m.readAt, '2025-11-25T09:01:40.000Z', "the provider's time");
  assert.equal(m.deliveredAt, '2025-11-25T09:01:40.000Z', 'read implies delivered');
});

test('a forged or unsigned WhatsApp webhook is refused with nothing stored', async (t) => {
  const { app, admin } = await setup(t);
  const payload = metaPayload({
    messages: [{ from: '447700900128', id: 'wamid.F1', timestamp: '1', type: 'text', text: { body: 'x' } }],
  });
  const body = JSON.stringify(payload);
  const before = (await guests(app, admin)).length;
  for (const signature of ['', metaSign(body, 'other-secret'), metaSign(`${body} `), 'sha256=00']) {
    assertError(await postMeta(app, payload, signature), 403, 'FORBIDDEN');
  }
  const unsigned = await call(app, 'POST', '/api/v1/channels/whatsapp/webhook', { body: payload });
  assertError(unsigned, 403, 'FORBIDDEN');
  assert.equal((await guests(app, admin)).length, before);
  // Signed but not JSON: a clear 400, not a 500.
  const garbage = await call(app, 'POST', '/api/v1/channels/whatsapp/webhook', {
    body: '{"object":',
    headers: { 'content-type': 'application/json', 'x-hub-signature-256': metaSign('{"object":') },
  });
  assertError(garbage, 400, 'VALIDATION_ERROR');
});

test('an inbound e-mail from an unknown sender opens a conversation with its subject; a reply threads', async (t) => {
  const { app, admin } = await setup(t, {
    SMTP_URL: 'smtp://127.0.0.1:9',
    EMAIL_FROM: 'Front Desk <desk@hotel.example.test>',
  });
  const raw = email({
    from: 'Mara Quist <Mara.Quist@Example.test>',
    subject: 'Parking',
    messageId: '<m1@mail.example.test>',
    text: 'Do you have parking?',
  });
  const first = await postEmail(app, raw);
  assert.equal(first.status, 201, JSON.stringify(first.body));
  assert.equal(first.data.guestCreated, true);
  assert.equal(first.data.conversationCreated, true);
  assert.equal((await postEmail(app, raw)).data.duplicate, true);
  const guest = (await guests(app, admin)).find((g) => g.email?.toLowerCase() === 'mara.quist@example.test')!;
  assert.equal(guest.name, 'Mara Quist');
  const [conv] = await conversationsOf(app, admin, guest.id);
  assert.equal(conv!.subject, 'Parking');
  assert.equal(conv!.messageCount, 1);

  // The hotel answers (dry run: sent with its Message-ID), then a second conversation is opened;
  // the guest's reply to the first answer goes to the first conversation, not the latest.
  const answer = await call(app, 'POST', `/conversations/${conv!.id}/messages`, {
    token: admin.token,
    body: { content: 'Yes, in the garage.' },
  });
  const sent = await settled(app, admin, conv!.id, answer.data.id);
  assert.match(sent.externalId, /^<[0-9a-f]{32}@hotel\.example\.test>$/);
  const other = await call(app, 'POST', '/conversations', {
    token: admin.token,
    body: { guestId: guest.id, channel: 'email', subject: 'Invoice' },
  });
  assert.equal(other.status, 201);
  const reply = await postEmail(
    app,
    email({
      from: 'mara.quist@example.test',
      subject: 'Re: Parking',
      messageId: '<m2@mail.example.test>',
      inReplyTo: sent.externalId,
      references: `<m1@mail.example.test> ${sent.externalId}`,
      text: 'Great, thanks!\n\n> Yes, in the garage.',
    }),
  );
  assert.equal(reply.status, 201);
  assert.equal(reply.data.conversationId, conv!.id, 'threaded by In-Reply-To');
  assert.equal(reply.data.guestCreated, false, 'matched by e-mail, any case');
});

test('inbound e-mail needs the secret as the Basic password', async (t) => {
  const { app } = await setup(t);
  const raw = email({ from: 'x@example.test', messageId: '<m3@x>', text: 'hi' });
  assertError(await postEmail(app, raw, 'wrong'), 403, 'FORBIDDEN');
  const none = await call(app, 'POST', '/api/v1/channels/email/inbound', {
    body: raw,
    headers: { 'content-type': 'message/rfc822' },
  });
  assertError(none, 403, 'FORBIDDEN');
  const noFrom = await postEmail(app, 'Subject: no sender\r\n\r\nbody\r\n');
  assertError(noFrom, 400, 'VALIDATION_ERROR');
});

test("the web widget's backend posts a visitor's message: matched or new guest, once per externalId", async (t) => {
  const { app, admin } = await setup(t);
  const staff = await createStaff(app, 'staff');
  const body = {
    guest: { name: 'Visitor', email: 'visitor@example.test' },
    content: 'Is the spa open?',
    externalId: 'w-1',
  };
  const first = await call(app, 'POST', '/channels/web/inbound', { token: admin.token, body });
  assert.equal(first.status, 201, JSON.stringify(first.body));
  assert.equal(first.data.guestCreated, true);
  const again = await call(app, 'POST', '/channels/web/inbound', { token: admin.token, body });
  assert.equal(again.status, 200);
  assert.equal(again.data.duplicate, true);
  assert.equal(again.data.message.id, first.data.message.id);
  const byId = await call(app, 'POST', '/channels/web/inbound', {
    token: admin.token,
    body: { guestId: first.data.guestId, content: 'And the pool?' },
  });
  assert.equal(byId.status, 201);
  assert.equal(byId.data.conversationId, first.data.conversationId);

  assertError(await call(app, 'POST', '/channels/web/inbound', { token: staff.token, body }), 403, 'FORBIDDEN');
  assertError(
    await call(app, 'POST', '/channels/web/inbound', {
      token: admin.token,
      body: { ...body, guestId: first.data.guestId },
    }),
    400,
    'VALIDATION_ERROR',
  );
  assertError(
    await call(app, 'POST', '/channels/web/inbound', {
      token: admin.token,
      body: { guest: { name: 'No contact' }, content: 'x' },
    }),
    400,
    'VALIDATION_ERROR',
  );
  assertError(
    await call(app, 'POST', '/channels/web/inbound', {
      token: admin.token,
      body: { guestId: 'gst_nope', content: 'x' },
    }),
    400,
    'VALIDATION_ERROR',
  );
});

test('the same provider message delivered concurrently is stored once', async (t) => {
  const { app, admin } = await setup(t);
  const params = { MessageSid: 'SM0009', From: '+447700900129', To: TWILIO_SMS_NUMBER, Body: 'Race' };
  const all = await Promise.all(Array.from({ length: 8 }, () => postTwilio(app, 'inbound', params)));
  for (const r of all) assert.equal(r.status, 200, r.raw.body);
  const matching = (await guests(app, admin)).filter((g) => g.phone === '+447700900129');
  assert.equal(matching.length, 1, 'one guest');
  const convs = await conversationsOf(app, admin, matching[0]!.id);
  assert.equal(convs.length, 1, 'one conversation');
  assert.equal((await messagesOf(app, admin, convs[0]!.id)).length, 1, 'one message');
});

test('the auto reply goes once per conversation while the hotel is closed, and never while open', async (t) => {
  const { app, admin } = await setup(t);
  const put = (key: string, value: unknown) =>
    call(app, 'PUT', `/settings/${key}`, { token: admin.token, body: { value } });
  assert.equal((await put('auto_reply', { enabled: true, message: 'We are closed; we answer at 8.' })).status, 200);
  // Open all day (the default): no auto reply.
  const open = await call(app, 'POST', '/channels/web/inbound', {
    token: admin.token,
    body: { guest: { name: 'Early', phone: '+447700900130' }, content: 'Hello?' },
  });
  assert.equal(open.data.autoReply, null);

  const closed = { timezone: 'Europe/Lisbon', days: { mon: [], tue: [], wed: [], thu: [], fri: [], sat: [], sun: [] } };
  assert.equal((await put('business_hours', closed)).status, 200);
  const first = await call(app, 'POST', '/channels/web/inbound', {
    token: admin.token,
    body: { guest: { name: 'Late', phone: '+447700900131' }, content: 'Anyone there?' },
  });
  assert.equal(first.status, 201);
  assert.equal(first.data.autoReply.content, 'We are closed; we answer at 8.');
  assert.deepEqual(first.data.autoReply.sender, { type: 'system', id: null });
  const second = await call(app, 'POST', '/channels/web/inbound', {
    token: admin.token,
    body: { guestId: first.data.guestId, content: 'Hello??' },
  });
  assert.equal(second.data.autoReply, null, 'one reply per closed period');
  const msgs = await messagesOf(app, admin, first.data.conversationId);
  assert.deepEqual(
    msgs.map((m) => `${m.direction}:${m.sender.type}`),
    ['inbound:guest', 'outbound:system', 'inbound:guest'],
  );
  assert.equal(msgs[1]!.deliveryStatus, 'sent', 'a web reply is sent at once');
});

test("an API key with channels:inbound posts the widget's messages; a text sent with a key names the key", async (t) => {
  const { app, admin } = await setup(t);
  const made = async (scopes: string[]) => {
    const res = await call(app, 'POST', '/api-keys', {
      token: admin.token,
      body: { name: `widget ${scopes}`, scopes },
    });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return res.data as { id: string; key: string };
  };
  const widget = await made(['channels:inbound']);
  const body = { guest: { name: 'Key Visitor', email: 'key.visitor@example.test' }, content: 'Hello from the widget' };
  const res = await call(app, 'POST', '/channels/web/inbound', { token: widget.key, body });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  const reader = await made(['conversations:read']);
  assertError(await call(app, 'POST', '/channels/web/inbound', { token: reader.key, body }), 403, 'FORBIDDEN');

  const writer = await made(['conversations:write']);
  const sent = await call(app, 'POST', `/conversations/${res.data.conversationId}/messages`, {
    token: writer.key,
    body: { content: 'Hello from the PMS' },
  });
  assert.equal(sent.status, 201, JSON.stringify(sent.body));
  assert.deepEqual(sent.data.sender, { type: 'api_key', id: writer.id });
});
