// Tests journey messages through HTTP (docs/stays.md, Journeys): a WhatsApp template step goes
// through the ordinary send path, its placeholders filled in, to a Meta-shaped API on loopback
// (test/channels/fakes.ts) as a template by name and language; a step that cannot be carried out
// (no address for its channel, a template the setting does not hold) ends `failed` with its reason
// in GET /stays/:id/journey and in its journey.step_skipped event, sends nothing and is not retried.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FAST_CHANNELS, fakeMeta, metaEnv, until } from '../channels/fakes.js';
import { TEMPLATES } from '../channels/outbound-actions.js';
import { buildTestApp, call, createStaff } from '../helpers.js';

const DAY = 86_400_000;
const dayOf = (t: number) => new Date(t).toISOString().slice(0, 10);

// biome-ignore lint/suspicious/noExplicitAny: the API's JSON.
type Json = Record<string, any>;

async function hotel(t: Parameters<typeof buildTestApp>[0], env: Record<string, string> = {}) {
  const app = await buildTestApp(t, { ...FAST_CHANNELS, ...env });
  const { token } = await createStaff(app, 'admin');
  const put = async (key: string, value: unknown) => {
    const res = await call(app, 'PUT', `/settings/${key}`, { token, body: { value } });
    assert.equal(res.status, 200, JSON.stringify(res.body));
  };
  await put('hotel', { name: 'Casa Azul', timezone: 'UTC', locale: 'en', checkInTime: '15:00', checkOutTime: '11:00' });
  const guest = async (body: Json) => {
    const res = await call(app, 'POST', '/guests', { token, body });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return res.data.id as string;
  };
  /** A stay booked a month ahead, then checked in: its check_in steps are due at once. */
  const checkIn = async (guestId: string, room: string) => {
    const res = await call(app, 'POST', '/stays', {
      token,
      body: { guestId, room, checkIn: dayOf(Date.now() + 30 * DAY), checkOut: dayOf(Date.now() + 32 * DAY) },
    });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    const patched = await call(app, 'PATCH', `/stays/${res.data.id}`, { token, body: { status: 'in_house' } });
    assert.equal(patched.status, 200, JSON.stringify(patched.body));
    return res.data.id as string;
  };
  const steps = async (stayId: string): Promise<Record<string, Json>> => {
    const res = await call(app, 'GET', `/stays/${stayId}/journey`, { token });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return Object.fromEntries(res.data.map((s: Json) => [s.journey, s]));
  };
  const ran = async (stayId: string, journey: string): Promise<Json> => {
    let step: Json | undefined;
    await until(
      `${journey} of ${stayId} to run`,
      async () => {
        step = (await steps(stayId))[journey];
        return step !== undefined && step.status !== 'scheduled';
      },
      800,
    );
    return step!;
  };
  const events = async (type: string): Promise<Json[]> => {
    const res = await call(app, 'GET', `/events?types=${type}&limit=100`, { token });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return res.data;
  };
  return { app, token, put, guest, checkIn, steps, ran, events };
}

test('a WhatsApp template step goes through the send path with its placeholders filled in', async (t) => {
  const meta = await fakeMeta(t);
  const h = await hotel(t, metaEnv(meta));
  await h.put('whatsapp_templates', TEMPLATES);
  await h.put('journeys', [
    {
      name: 'room-ready',
      when: { event: 'check_in' },
      channel: 'whatsapp',
      action: {
        type: 'message',
        template: { name: 'room_ready', language: 'en_US', parameters: ['{{guest.firstName}}', '{{stay.room}}'] },
      },
    },
  ]);
  // The guest never wrote on WhatsApp: free text would be refused, a template goes at any time.
  const phone = '+351911222333';
  const guestId = await h.guest({ name: 'Rosa Marques', phone });
  const stayId = await h.checkIn(guestId, '412');
  const step = await h.ran(stayId, 'room-ready');
  assert.equal(step.status, 'done', JSON.stringify(step));
  assert.equal(step.reason, null);

  const conversations = await call(h.app, 'GET', '/conversations', { token: h.token });
  assert.equal(conversations.data.length, 1);
  assert.equal(conversations.data[0].channel, 'whatsapp');
  const conversationId = conversations.data[0].id as string;
  let message: Json | undefined;
  await until('the template to be sent', async () => {
    const res = await call(h.app, 'GET', `/conversations/${conversationId}/messages`, { token: h.token });
    message = res.data.find((m: Json) => m.id === step.messageId);
    return message?.deliveryStatus === 'sent';
  });
  assert.equal(message!.type, 'text');
  assert.equal(message!.content, 'Hello Rosa, room 412 is ready.');
  assert.equal(message!.sender.type, 'system');
  // Meta got it as the template by name and language with the filled-in parameters (a send the
  // provider took but whose answer came too late is sent again: at least once, docs/channels.md).
  assert.ok(meta.requests.length >= 1);
  assert.ok(
    meta.accepted.some((a) => a.wamid === message!.externalId),
    JSON.stringify({ message, accepted: meta.accepted }),
  );
  const expected = {
    messaging_product: 'whatsapp',
    recipient_type: 'individual',
    to: phone.slice(1),
    type: 'template',
    template: {
      name: 'room_ready',
      language: { code: 'en_US' },
      components: [
        {
          type: 'body',
          parameters: [
            { type: 'text', text: 'Rosa' },
            { type: 'text', text: '412' },
          ],
        },
      ],
    },
  };
  for (const r of meta.requests) assert.deepEqual(JSON.parse(r.body), expected);
  const done = (await h.events('journey.step_done')).filter((e) => e.data.stayId === stayId);
  assert.equal(done.length, 1);
  assert.equal(done[0]!.data.messageId, step.messageId);
});

test('a step that cannot be carried out ends failed with its reason, in the journey and its event', async (t) => {
  const h = await hotel(t, { CHANNELS_DRY_RUN: 'true' });
  await h.put('whatsapp_templates', TEMPLATES);
  await h.put('journeys', [
    {
      name: 'by-mail',
      when: { event: 'check_in' },
      channel: 'email',
      action: { type: 'message', content: 'Welcome {{guest.firstName}}' },
    },
    {
      name: 'unknown-template',
      when: { event: 'check_in' },
      channel: 'whatsapp',
      action: { type: 'message', template: { name: 'welcome', language: 'pt_PT', parameters: [] } },
    },
  ]);
  // A phone number and no e-mail address.
  const guestId = await h.guest({ name: 'Rosa Marques', phone: '+351911222444' });
  const stayId = await h.checkIn(guestId, '7');
  const byMail = await h.ran(stayId, 'by-mail');
  const template = await h.ran(stayId, 'unknown-template');
  assert.deepEqual(
    { status: byMail.status, messageId: byMail.messageId, taskId: byMail.taskId, reason: byMail.reason },
    { status: 'failed', messageId: null, taskId: null, reason: 'the guest has no address for the email channel' },
  );
  assert.equal(template.status, 'failed');
  assert.match(template.reason, /"welcome" exists in en_US only/);

  // Each failed step has its event, with the same step as the journey shows it; nothing was sent.
  const skipped = (await h.events('journey.step_skipped')).filter((e) => e.data.stayId === stayId);
  assert.deepEqual(
    skipped.map((e) => e.data).sort((a, b) => (a.journey < b.journey ? -1 : 1)),
    [byMail, template],
  );
  assert.equal((await h.events('journey.step_done')).length, 0);
  const conversations = await call(h.app, 'GET', '/conversations', { token: h.token });
  assert.equal(conversations.data.length, 0);
  // Not retried: still failed, and still one event each, after the job runner had time to run them again.
  const steps = await h.steps(stayId);
  assert.equal(steps['by-mail']!.status, 'failed');
  assert.equal(steps['unknown-template']!.status, 'failed');
  const jobs = await h.app.ctx.store.db
    .selectFrom('jobs')
    .select(['status', 'attempts'])
    .where('kind', '=', 'journey.step')
    .execute();
  assert.deepEqual(
    jobs.map((j) => [j.status, Number(j.attempts)]),
    [
      ['done', 1],
      ['done', 1],
    ],
  );
});

test("a step's new conversation shows as a read of it does, and counts in the reports", async (t) => {
  const h = await hotel(t, { CHANNELS_DRY_RUN: 'true' });
  const begin = new Date(Date.now() - 60_000).toISOString();
  // A resolution target, so the opening writes the conversation's SLA columns.
  await h.put('sla', {
    firstResponseMinutes: 30,
    resolutionMinutes: 600,
    businessHours: false,
    taskMinutes: { low: 600, normal: 240, high: 60, urgent: 15 },
  });
  await h.put('journeys', [
    { name: 'welcome', when: { event: 'check_in' }, channel: 'sms', action: { type: 'message', content: 'Hi' } },
    { name: 'wifi', when: { event: 'check_in' }, channel: 'sms', action: { type: 'message', content: 'Wi-Fi: azul' } },
  ]);
  const guestId = await h.guest({ name: 'Inês Duarte', phone: '+351911222555' });
  const stayId = await h.checkIn(guestId, '12');
  const welcome = await h.ran(stayId, 'welcome');
  const wifi = await h.ran(stayId, 'wifi');
  assert.deepEqual([welcome.status, wifi.status], ['done', 'done']);

  // Both steps wrote into one conversation, opened by the first with its event.
  const created = (await h.events('conversation.created')).map((e) => e.data);
  assert.equal(created.length, 1);
  const res = await call(h.app, 'GET', `/conversations/${created[0].id}`, { token: h.token });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.equal(res.data.messageCount, 2);
  assert.equal(res.data.stay.id, stayId);
  assert.notEqual(res.data.sla.resolutionDueAt, null);
  // As a read showed it then: the same but for what the second message changed.
  const { messageCount, lastMessageAt, updatedAt, ...rest } = res.data;
  const { messageCount: n0, lastMessageAt: l0, updatedAt: u0, ...atOpening } = created[0];
  assert.deepEqual(atOpening, rest);
  assert.equal(n0, 1);
  assert.ok(l0 <= lastMessageAt && u0 <= updatedAt);
  // Both texts are sent (the second's job waits for the first's: one conversation's texts go in order).
  await until('both texts to be sent', async () => {
    const m = await call(h.app, 'GET', `/conversations/${created[0].id}/messages`, { token: h.token });
    return m.data.length === 2 && m.data.every((x: Json) => x.deliveryStatus === 'sent');
  });

  const summary = await call(h.app, 'GET', `/reports/summary?from=${begin}&businessHours=false`, { token: h.token });
  assert.equal(summary.status, 200, JSON.stringify(summary.body));
  assert.deepEqual(summary.data.conversations, { opened: 1, resolved: 0 });
  assert.deepEqual(summary.data.messages, { inbound: 0, outbound: 2 });
  assert.deepEqual(summary.data.sla.resolution, { met: 0, breached: 0 });
});
