// The channels' round trip (docs/channels.md), as a new user would try it against local fakes: a text leaves through
// the provider and comes back `delivered` on the provider's signed callback while a forged one
// changes nothing; the guest's answer, delivered twice, lands once in the same conversation; an
// unknown number becomes a new guest with a conversation. For Twilio (SMS) and WhatsApp Cloud.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { buildTestApp, call, createStaff, type Res, type TestUser } from '../helpers.js';
import { FAST_CHANNELS, fakeMeta, fakeTwilio, metaEnv, PUBLIC_URL, twilioEnv, until } from './fakes.js';
import { metaPayload, metaSign, twilioSign } from './signing.js';

const message = (app: FastifyInstance, admin: TestUser, c: string, m: string) =>
  call(app, 'GET', `/conversations/${c}/messages/${m}`, { token: admin.token }).then((r) => r.data);

async function start(app: FastifyInstance, admin: TestUser, channel: string, phone: string) {
  const guest = await call(app, 'POST', '/guests', { token: admin.token, body: { name: 'Rui Costa', phone } });
  const conv = await call(app, 'POST', '/conversations', {
    token: admin.token,
    body: { guestId: guest.data.id, channel },
  });
  assert.equal(conv.status, 201, JSON.stringify(conv.body));
  return { guestId: guest.data.id as string, conversationId: conv.data.id as string };
}

test('SMS round trip through a Twilio-shaped API: sent, delivered on a signed callback, the answer stored once', async (t) => {
  const twilio = await fakeTwilio(t);
  const app = await buildTestApp(t, { ...FAST_CHANNELS, ...twilioEnv(twilio) });
  const admin = await createStaff(app, 'admin');
  const form = (path: string, params: Record<string, string>, token = twilio.authToken): Promise<Res> =>
    call(app, 'POST', path, {
      body: new URLSearchParams(params).toString(),
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        'x-twilio-signature': twilioSign(PUBLIC_URL + path, params, token),
      },
    });

  const { guestId, conversationId } = await start(app, admin, 'sms', '+351912000001');
  const sent = await call(app, 'POST', `/conversations/${conversationId}/messages`, {
    token: admin.token,
    body: { content: 'Your room is ready' },
  });
  await until('the text reaches Twilio', () => twilio.accepted.length === 1);
  const sid = twilio.accepted[0]!.sid!;
  await until(
    'the text is sent',
    async () => (await message(app, admin, conversationId, sent.data.id)).deliveryStatus === 'sent',
  );

  const status = '/api/v1/channels/twilio/status';
  const forged = await form(status, { MessageSid: sid, MessageStatus: 'delivered' }, 'not-the-token');
  assert.equal(forged.status, 403);
  assert.equal((await message(app, admin, conversationId, sent.data.id)).deliveryStatus, 'sent');
  assert.equal((await form(status, { MessageSid: sid, MessageStatus: 'delivered' })).status, 204);
  assert.equal((await message(app, admin, conversationId, sent.data.id)).deliveryStatus, 'delivered');

  const inbound = '/api/v1/channels/twilio/inbound';
  const answer = {
    MessageSid: 'SMreply0001',
    From: '+351912000001',
    To: twilio.accepted[0]!.form.From!,
    Body: 'Thanks!',
  };
  assert.equal((await form(inbound, answer)).status, 200);
  assert.equal((await form(inbound, answer)).status, 200);
  const list = await call(app, 'GET', `/conversations/${conversationId}/messages`, { token: admin.token });
  assert.deepEqual(
    list.data.map((m: { direction: string; content: string }) => `${m.direction}: ${m.content}`),
    ['outbound: Your room is ready', 'inbound: Thanks!'],
  );

  const stranger = { MessageSid: 'SMnew0001', From: '+351912000099', To: answer.To, Body: 'Do you have rooms in May?' };
  assert.equal((await form(inbound, stranger)).status, 200);
  const guests = await call(app, 'GET', '/guests?search=351912000099', { token: admin.token });
  assert.equal(guests.data.length, 1, 'a new guest');
  assert.notEqual(guests.data[0].id, guestId);
  const theirs = await call(app, 'GET', '/conversations?limit=100', { token: admin.token });
  const conv = theirs.data.find((c: { guestId: string }) => c.guestId === guests.data[0].id);
  assert.equal(conv.channel, 'sms');
  assert.equal(conv.status, 'open');
  assert.equal(conv.messageCount, 1);
});

test('WhatsApp Cloud round trip: the guest writes (signed), the answer goes to Meta, read on a signed status', async (t) => {
  const meta = await fakeMeta(t);
  const secret = 'round-trip-app-secret';
  const app = await buildTestApp(t, { ...FAST_CHANNELS, ...metaEnv(meta), WHATSAPP_APP_SECRET: secret });
  const admin = await createStaff(app, 'admin');
  const hook = (payload: unknown, sign = secret) => {
    const body = JSON.stringify(payload);
    return call(app, 'POST', '/api/v1/channels/whatsapp/webhook', {
      body,
      headers: { 'content-type': 'application/json', 'x-hub-signature-256': metaSign(body, sign) },
    });
  };
  const { conversationId } = await start(app, admin, 'whatsapp', '+351912000002');
  const hello = metaPayload(
    {
      messages: [
        { from: '351912000002', id: 'wamid.IN1', timestamp: '1764061200', type: 'text', text: { body: 'Olá' } },
      ],
    },
    meta.phoneNumberId,
  );
  assert.deepEqual((await hook(hello)).data, { messages: 1, duplicates: 0, statuses: 0, skipped: 0 });
  assert.deepEqual((await hook(hello)).data, { messages: 0, duplicates: 1, statuses: 0, skipped: 0 });

  // Inside the 24-hour window now: free text goes to Meta.
  const sent = await call(app, 'POST', `/conversations/${conversationId}/messages`, {
    token: admin.token,
    body: { content: 'Bem-vindo!' },
  });
  assert.equal(sent.status, 201, JSON.stringify(sent.body));
  await until('the text reaches Meta', () => meta.accepted.length === 1);
  const wamid = meta.accepted[0]!.wamid;
  await until(
    'the text is sent',
    async () => (await message(app, admin, conversationId, sent.data.id)).deliveryStatus === 'sent',
  );
  const read = metaPayload(
    { statuses: [{ id: wamid, status: 'read', timestamp: '1764061300', recipient_id: '351912000002' }] },
    meta.phoneNumberId,
  );
  assert.equal((await hook(read, 'forged-secret')).status, 403);
  assert.equal((await message(app, admin, conversationId, sent.data.id)).deliveryStatus, 'sent');
  assert.equal((await hook(read)).data.statuses, 1);
  const after = await message(app, admin, conversationId, sent.data.id);
  assert.equal(after.deliveryStatus, 'read');
  assert.ok(after.deliveredAt && after.readAt);
});
