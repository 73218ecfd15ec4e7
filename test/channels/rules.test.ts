// The rules that follow a guest's message (docs/channels.md): WhatsApp's 24-hour window for free text,
// template messages from the whatsapp_templates setting, and the business-hours arithmetic the
// auto reply relies on (test/channels/inbound.test.ts has the auto reply itself).
import assert from 'node:assert/strict';
import test from 'node:test';
import type { FastifyInstance } from 'fastify';
import { nowIso } from '../../src/db/store.js';
import { newId } from '../../src/lib/ids.js';
import { type BusinessHours, closedSince, isOpen } from '../../src/modules/channels/hours.js';
import { assertError, insertGuest } from '../fixtures.js';
import { buildTestApp, call, createStaff, type TestUser } from '../helpers.js';
import { INBOUND_ENV, metaPayload, postMeta } from './signing.js';

const TEMPLATES = [
  { name: 'room_ready', language: 'en_US', body: 'Hello {{1}}, room {{2}} is ready.' },
  { name: 'room_ready', language: 'pt_PT', body: 'Olá {{1}}, o quarto {{2}} está pronto.' },
  { name: 'welcome', language: 'en_US', body: 'Welcome to the hotel!' },
];

async function setup(t: test.TestContext) {
  const app = await buildTestApp(t, { ...INBOUND_ENV, CHANNELS_DRY_RUN: 'true' });
  const admin = await createStaff(app, 'admin');
  return { app, admin };
}

async function whatsappConversation(app: FastifyInstance, admin: TestUser) {
  const guestId = await insertGuest(app);
  const c = await call(app, 'POST', '/conversations', { token: admin.token, body: { guestId, channel: 'whatsapp' } });
  assert.equal(c.status, 201, JSON.stringify(c.body));
  const phone = (await call(app, 'GET', `/guests/${guestId}`, { token: admin.token })).data.phone as string;
  return { guestId, conversationId: c.data.id as string, phone };
}

const text = (app: FastifyInstance, admin: TestUser, conversationId: string, body: object) =>
  call(app, 'POST', `/conversations/${conversationId}/messages`, { token: admin.token, body });

test('free text on WhatsApp needs the guest to have written within 24 hours; a note never does', async (t) => {
  const { app, admin } = await setup(t);
  const { guestId, conversationId, phone } = await whatsappConversation(app, admin);

  const never = await text(app, admin, conversationId, { content: 'Hi!' });
  assertError(never, 409, 'CONFLICT');
  assert.match(never.body.error.message, /24-hour window/);
  assert.equal((await text(app, admin, conversationId, { content: 'internal', type: 'note' })).status, 201);
  const opening = await call(app, 'POST', '/conversations', {
    token: admin.token,
    body: { guestId, channel: 'whatsapp', content: 'Hello' },
  });
  assertError(opening, 409, 'CONFLICT', 'a first text counts too');

  // The guest writes (signed Meta webhook): the window opens.
  const inbound = await postMeta(
    app,
    metaPayload({
      messages: [{ from: phone.slice(1), id: 'wamid.W1', timestamp: '1', type: 'text', text: { body: 'Hi' } }],
    }),
  );
  assert.equal(inbound.data.messages, 1);
  assert.equal((await text(app, admin, conversationId, { content: 'Welcome!' })).status, 201);

  // Only a message older than 24 hours: the window is closed again.
  await app.ctx.store.db
    .updateTable('messages')
    .set({ created_at: new Date(Date.now() - 25 * 3600_000).toISOString() })
    .where('direction', '=', 'inbound')
    .execute();
  const late = await text(app, admin, conversationId, { content: 'Still there?' });
  assertError(late, 409, 'CONFLICT');
  assert.match(late.body.error.message, /more than 24 hours ago/);
});

test('a template message goes at any time: rendered from the setting, checked, stored as a text', async (t) => {
  const { app, admin } = await setup(t);
  const { conversationId } = await whatsappConversation(app, admin);
  const put = await call(app, 'PUT', '/settings/whatsapp_templates', {
    token: admin.token,
    body: { value: TEMPLATES },
  });
  assert.equal(put.status, 200, JSON.stringify(put.body));

  const sent = await text(app, admin, conversationId, {
    type: 'template',
    template: { name: 'room_ready', language: 'pt_PT', parameters: ['Ana', '412'] },
  });
  assert.equal(sent.status, 201, JSON.stringify(sent.body));
  assert.equal(sent.data.type, 'text');
  assert.equal(sent.data.content, 'Olá Ana, o quarto 412 está pronto.');
  assert.equal(sent.data.deliveryStatus, 'queued');
  const none = await text(app, admin, conversationId, {
    type: 'template',
    template: { name: 'welcome', language: 'en_US' },
  });
  assert.equal(none.status, 201);
  assert.equal(none.data.content, 'Welcome to the hotel!');

  const bad: [object, string][] = [
    [{ type: 'template', template: { name: 'nope', language: 'en_US' } }, 'template.name'],
    [
      { type: 'template', template: { name: 'room_ready', language: 'de_DE', parameters: ['a', 'b'] } },
      'template.language',
    ],
    [
      { type: 'template', template: { name: 'room_ready', language: 'en_US', parameters: ['Ana'] } },
      'template.parameters',
    ],
    [{ type: 'template', template: { name: 'welcome', language: 'en_US', parameters: ['x'] } }, 'template.parameters'],
    [{ type: 'template' }, 'template'],
    [{ type: 'template', content: 'x', template: { name: 'welcome', language: 'en_US' } }, 'content'],
    [{ type: 'text' }, 'content'],
    [{ content: 'x', template: { name: 'welcome', language: 'en_US' } }, 'template'],
  ];
  for (const [body, field] of bad) {
    const res = await text(app, admin, conversationId, body);
    assertError(res, 400, 'VALIDATION_ERROR', JSON.stringify(body));
    assert.ok(
      res.body.error.details.some((d: { field: string }) => d.field === field),
      `${JSON.stringify(body)} names ${field}: ${JSON.stringify(res.body.error.details)}`,
    );
  }
  // Not on another channel.
  const sms = await call(app, 'POST', '/conversations', {
    token: admin.token,
    body: { guestId: await insertGuest(app), channel: 'sms' },
  });
  const onSms = await text(app, admin, sms.data.id, {
    type: 'template',
    template: { name: 'welcome', language: 'en_US' },
  });
  assertError(onSms, 400, 'VALIDATION_ERROR');
});

test('the whatsapp_templates setting refuses duplicates, gaps in placeholders and bad names', async (t) => {
  const { app, admin } = await setup(t);
  const put = (value: unknown) =>
    call(app, 'PUT', '/settings/whatsapp_templates', { token: admin.token, body: { value } });
  assertError(await put([TEMPLATES[0], TEMPLATES[0]]), 400, 'VALIDATION_ERROR');
  assertError(await put([{ name: 'gap', language: 'en_US', body: 'Hi {{2}}' }]), 400, 'VALIDATION_ERROR');
  assertError(await put([{ name: 'Bad Name', language: 'en_US', body: 'Hi' }]), 400, 'VALIDATION_ERROR');
  assertError(await put([{ name: 'x', language: 'english', body: 'Hi' }]), 400, 'VALIDATION_ERROR');
  assertError(
    await put(Array.from({ length: 201 }, (_, i) => ({ name: `t${i}`, language: 'en', body: 'x' }))),
    400,
    'VALIDATION_ERROR',
  );
  assert.equal((await put(TEMPLATES)).status, 200);
});

test('business hours: open inside an interval in the hotel time zone, closed periods start at the last close', () => {
  const hours: BusinessHours = {
    timezone: 'Europe/Lisbon',
    days: {
      mon: [{ open: '08:00', close: '20:00' }],
      tue: [
        { open: '08:00', close: '12:00' },
        { open: '14:00', close: '20:00' },
      ],
      wed: [{ open: '00:00', close: '23:59' }],
      thu: [{ open: '00:00', close: '23:59' }],
      fri: [],
      sat: [],
      sun: [{ open: '10:00', close: '16:00' }],
    },
  };
  // Summer time (UTC+1): Monday 2026-07-06 08:30 Lisbon is 07:30 UTC.
  assert.equal(isOpen(hours, new Date('2026-07-06T07:30:00Z')), true);
  assert.equal(isOpen(hours, new Date('2026-07-06T06:30:00Z')), false, '07:30 local, before opening');
  // Tuesday's lunch break: closed since 12:00 local (11:00 UTC).
  assert.equal(isOpen(hours, new Date('2026-07-07T12:30:00Z')), false);
  assert.equal(closedSince(hours, new Date('2026-07-07T12:30:00Z'))?.toISOString(), '2026-07-07T11:00:00.000Z');
  // Wednesday and Thursday run through midnight; 23:59 means to the end of the day.
  assert.equal(isOpen(hours, new Date('2026-07-08T22:59:30Z')), true, '23:59:30 local Wednesday');
  // Saturday: closed since Thursday's end, midnight into Friday (local), through the empty Friday.
  assert.equal(closedSince(hours, new Date('2026-07-11T10:00:00Z'))?.toISOString(), '2026-07-09T23:00:00.000Z');
  // Winter time (UTC+0), across the change on 2026-10-25: Monday 2026-10-26 at 07:30 UTC is 07:30 local.
  assert.equal(isOpen(hours, new Date('2026-10-26T07:30:00Z')), false);
  assert.equal(closedSince(hours, new Date('2026-10-26T07:30:00Z'))?.toISOString(), '2026-10-25T16:00:00.000Z');
  // Never open: no closed period start.
  assert.equal(closedSince({ timezone: 'UTC', days: {} }, new Date()), null);
  assert.equal(
    isOpen(
      { timezone: 'Asia/Kolkata', days: { mon: [{ open: '09:00', close: '10:00' }] } },
      new Date('2026-07-06T03:45:00Z'),
    ),
    true,
  );
});

test('a guest message arriving over WhatsApp opens the window for every WhatsApp conversation of the guest', async (t) => {
  const { app, admin } = await setup(t);
  const { guestId, phone } = await whatsappConversation(app, admin);
  // A second, older conversation of the same guest; the guest writes into the latest.
  const other = await call(app, 'POST', '/conversations', {
    token: admin.token,
    body: { guestId, channel: 'whatsapp' },
  });
  await app.ctx.store.db
    .insertInto('messages')
    .values({
      id: newId('msg'),
      conversation_id: other.data.id,
      direction: 'inbound',
      type: 'text',
      content: 'hello',
      sender_type: 'guest',
      sender_id: guestId,
      delivery_status: 'received',
      created_at: nowIso(),
    })
    .execute();
  const c = await call(app, 'GET', `/conversations?limit=100`, { token: admin.token });
  for (const conv of (c.data as { id: string; guestId: string }[]).filter((x) => x.guestId === guestId)) {
    assert.equal((await text(app, admin, conv.id, { content: 'We can help.' })).status, 201, conv.id);
  }
  assert.ok(phone);
});
