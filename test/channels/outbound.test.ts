// Outbound delivery against real servers on loopback (test/channels/fakes.ts): texts reach an SMTP
// server, a Twilio-shaped and a Meta-shaped API; temporary refusals, 429 / 5xx and hangs are
// retried, permanent refusals end `failed` with the provider's reason, a failed text can be sent
// again as the same message, texts of a conversation leave in order, and two app instances on one
// store send each text once. Everything is observed through the API (the message, the event
// feed) and through what the fakes recorded; waiting is a bounded poll, never a timed assertion.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { assertError } from '../fixtures.js';
import { call, createStaff, freshDatabaseUrl, JWT_SECRET, redisEnv } from '../helpers.js';
import {
  EMAIL_FROM,
  FAST_CHANNELS,
  fakeMeta,
  fakeSmtp,
  fakeTwilio,
  metaEnv,
  PUBLIC_URL,
  SMS_FROM,
  smtpEnv,
  twilioEnv,
  until,
  WHATSAPP_FROM,
} from './fakes.js';
import { actions, setup } from './outbound-actions.js';
import { META_SECRET } from './signing.js';

const FORWARD = ['queued', 'sent', 'delivered', 'read'];
/** Statuses seen in order only ever move forward (failed ends a run; a retry starts a new one at queued). */
function assertForward(statuses: string[]) {
  let last = 'queued';
  for (const s of statuses) {
    if (s === 'queued') assert.equal(last, 'failed', `queued again only after failed: ${statuses}`);
    else if (s === 'failed') assert.ok(last !== 'failed', `failed twice in a row: ${statuses}`);
    else assert.ok(FORWARD.indexOf(s) > FORWARD.indexOf(last), `backwards: ${statuses}`);
    last = s;
  }
}

// ---------------------------------------------------------------------------------------------
// E-mail

test('e-mail: a text arrives at the SMTP server, becomes sent with its Message-ID, and replies thread', async (t) => {
  const smtp = await fakeSmtp(t, { user: 'relay-user', pass: 'relay pass' });
  const { app, admin, open, send, until, updates } = await setup(t, smtpEnv(smtp));
  const { conversation, guest } = await open('email', { subject: 'Your stay in June' });

  const first = await send(conversation.id, 'Welcome! Your room is ready.');
  assert.equal(first.deliveryStatus, 'queued');
  const sent = await until(conversation.id, first.id, 'sent');
  assert.equal(smtp.received.length, 1);
  const mail = smtp.received[0]!;
  assert.equal(mail.user, 'relay-user');
  assert.equal(mail.from, 'frontdesk@miramar.test');
  assert.equal(mail.fromName, 'Hotel Miramar');
  assert.equal(EMAIL_FROM, 'Hotel Miramar <frontdesk@miramar.test>');
  assert.equal(mail.mailFrom, 'frontdesk@miramar.test');
  assert.deepEqual(mail.rcptTo, [guest.email]);
  assert.equal(mail.to, guest.email);
  assert.equal(mail.subject, 'Your stay in June');
  assert.equal(mail.text, 'Welcome! Your room is ready.');
  assert.equal(mail.inReplyTo, null);
  assert.match(mail.messageId, /^<.+@miramar\.test>$/);
  assert.equal(sent.externalId, mail.messageId);
  assert.equal(sent.error, null);
  assert.ok(sent.sentAt >= sent.createdAt, JSON.stringify(sent));
  assert.equal(sent.deliveredAt, null);

  const second = await send(conversation.id, 'Breakfast is served until 10:30.');
  const sent2 = await until(conversation.id, second.id, 'sent');
  assert.equal(smtp.received.length, 2);
  const reply = smtp.received[1]!;
  assert.equal(reply.inReplyTo, mail.messageId);
  assert.deepEqual(reply.references, [mail.messageId]);
  assert.equal(sent2.externalId, reply.messageId);
  assert.notEqual(reply.messageId, mail.messageId);

  const third = await send(conversation.id, 'See you soon.');
  await until(conversation.id, third.id, 'sent');
  assert.equal(smtp.received[2]!.inReplyTo, reply.messageId);
  assert.deepEqual(smtp.received[2]!.references, [mail.messageId, reply.messageId]);

  assert.deepEqual(await updates(first.id), ['sent']);
  assert.deepEqual(await updates(second.id), ['sent']);
  const list = await call(app, 'GET', `/conversations/${conversation.id}/messages`, { token: admin.token });
  assert.equal(list.body.meta.total, 3);
});

test("e-mail: a long thread's References carry its first e-mail and the latest ones, 20 in all", async (t) => {
  const smtp = await fakeSmtp(t);
  const { app, open, send, until } = await setup(t, smtpEnv(smtp));
  const { conversation } = await open('email', { subject: 'A long stay' });
  const texts = [];
  for (let i = 1; i <= 22; i++) texts.push(await send(conversation.id, `Note ${i}`));
  await until(conversation.id, texts.at(-1)!.id, 'sent');
  assert.equal(smtp.received.length, 22);
  const ids = smtp.received.map((m) => m.messageId);
  // The 20th e-mail still names all 19 before it; the 22nd names the first and the latest 19.
  assert.deepEqual(smtp.received[19]!.references, ids.slice(0, 19));
  const last = smtp.received[21]!;
  assert.equal(last.inReplyTo, ids[20]);
  assert.deepEqual(last.references, [ids[0], ...ids.slice(2, 21)]);
  // A sent text leaves no send job behind: the table the dispatcher claims from does not grow.
  const jobs = await app.ctx.store.db.selectFrom('channel_sends').select('message_id').execute();
  assert.deepEqual(jobs, []);
});

test("e-mail: without a subject the hotel's name is the subject (its default name until it is set)", async (t) => {
  const smtp = await fakeSmtp(t);
  const { app, admin, open, send, until } = await setup(t, smtpEnv(smtp));
  const hotel = await call(app, 'GET', '/settings/hotel', { token: admin.token });
  assert.equal(hotel.status, 200);
  const { conversation } = await open('email');
  assert.equal(conversation.subject, null);
  const m = await send(conversation.id, 'Hello');
  await until(conversation.id, m.id, 'sent');
  assert.equal(smtp.received[0]!.subject, hotel.data.value.name);

  const put = await call(app, 'PUT', '/settings/hotel', {
    token: admin.token,
    body: { value: { name: 'Hotel Miramar', timezone: 'Europe/Lisbon', locale: 'pt-PT' } },
  });
  assert.equal(put.status, 200, JSON.stringify(put.body));
  const m2 = await send(conversation.id, 'Hello again');
  await until(conversation.id, m2.id, 'sent');
  assert.equal(smtp.received[1]!.subject, 'Hotel Miramar');
});

test('e-mail: 451 and a session stalled before DATA are retried and the text is sent once; 550 fails with the reason; retry sends the same message', async (t) => {
  const smtp = await fakeSmtp(t);
  const { app, admin, open, send, until, retry, updates } = await setup(t, smtpEnv(smtp));
  const { conversation } = await open('email');

  smtp.refuseNext(451, 2);
  // The first session stalls at RCPT TO, before the message: it is cut off at the send timeout.
  smtp.stallNext();
  const greylisted = await send(conversation.id, 'Your invoice is attached.');
  const sent = await until(conversation.id, greylisted.id, 'sent');
  assert.equal(smtp.attempts(), 3);
  assert.equal(smtp.sessions().opened, 4);
  assert.equal(smtp.received.length, 1);
  assert.equal(sent.externalId, smtp.received[0]!.messageId);
  assert.deepEqual(await updates(greylisted.id), ['sent']);

  smtp.refuseNext(550, 1, '550 5.1.1 <ana@guest.test>: Recipient address rejected: User unknown');
  const bounced = await send(conversation.id, 'Are you still there?');
  const failed = await until(conversation.id, bounced.id, 'failed');
  assert.equal(failed.error.code, 'SMTP_550');
  assert.match(failed.error.message, /Recipient address rejected: User unknown/);
  assert.equal(failed.sentAt, null);
  assert.equal(failed.externalId, null);
  // No further attempt: a later text of the conversation goes (it waited for nothing), and the
  // server saw exactly one attempt for the refused one.
  const later = await send(conversation.id, 'A later note to the guest');
  await until(conversation.id, later.id, 'sent');
  assert.equal(smtp.attempts(), 5);
  assert.equal(smtp.received.length, 2);

  // Retrying the failed text: the same message goes back to queued, then is sent.
  const again = await retry(conversation.id, bounced.id);
  assert.equal(again.status, 200, JSON.stringify(again.body));
  assert.equal(again.data.id, bounced.id);
  assert.equal(again.data.deliveryStatus, 'queued');
  assert.equal(again.data.error, null);
  const resent = await until(conversation.id, bounced.id, 'sent');
  assert.equal(smtp.received.length, 3);
  assert.equal(smtp.received[2]!.text, 'Are you still there?');
  assert.equal(resent.externalId, smtp.received[2]!.messageId);
  assert.deepEqual(await updates(bounced.id), ['failed', 'queued', 'sent']);
  assertForward(await updates(bounced.id));

  const list = await call(app, 'GET', `/conversations/${conversation.id}/messages`, { token: admin.token });
  assert.deepEqual(
    list.data.map((m: { content: string }) => m.content),
    ['Your invoice is attached.', 'Are you still there?', 'A later note to the guest'],
  );
  const conv = await call(app, 'GET', `/conversations/${conversation.id}`, { token: admin.token });
  assert.equal(conv.data.messageCount, 3);

  // Only a failed text can be retried.
  assertError(await retry(conversation.id, bounced.id), 409, 'CONFLICT', 'a sent text');
  const note = await send(conversation.id, 'internal', 'note');
  assertError(await retry(conversation.id, note.id), 409, 'CONFLICT', 'a note');
  assertError(await retry(conversation.id, 'msg_01m00000000000000000000000'), 404, 'NOT_FOUND', 'unknown message');
  assertError(await retry(conversation.id, 'x'.repeat(65)), 400, 'VALIDATION_ERROR', 'a too long id');
  assertError(
    await call(app, 'GET', `/conversations/${conversation.id}/messages/msg_01m00000000000000000000000`, {
      token: admin.token,
    }),
    404,
    'NOT_FOUND',
  );
});

test('e-mail: an SMTP server that cannot be reached is retried, and the text fails after the last attempt', async (t) => {
  const smtp = await fakeSmtp(t);
  // The app is pointed first at a port nothing listens on: every attempt fails to connect.
  const { open, send, settled } = await setup(t, {
    ...smtpEnv(smtp),
    SMTP_URL: 'smtp://127.0.0.1:1',
    CHANNEL_MAX_ATTEMPTS: '3',
  });
  const { conversation } = await open('email');
  const m = await send(conversation.id, 'Nobody will read this');
  const failed = await settled(conversation.id, m.id);
  assert.equal(failed.deliveryStatus, 'failed');
  assert.equal(failed.error.code, 'SMTP_UNREACHABLE');
  assert.equal(smtp.attempts(), 0);
});

// ---------------------------------------------------------------------------------------------
// SMS through Twilio

test('sms: Twilio receives To, From, Body and the status callback with Basic auth; the sid is the externalId', async (t) => {
  const twilio = await fakeTwilio(t);
  const { open, send, until, updates } = await setup(t, twilioEnv(twilio));
  const { conversation, guest } = await open('sms');
  const m = await send(conversation.id, 'Your room 204 is ready');
  const sent = await until(conversation.id, m.id, 'sent');
  assert.equal(twilio.accepted.length, 1);
  const got = twilio.accepted[0]!;
  assert.deepEqual(got.form, {
    To: guest.phone,
    From: SMS_FROM,
    Body: 'Your room 204 is ready',
    StatusCallback: `${PUBLIC_URL}/api/v1/channels/twilio/status`,
  });
  const req = twilio.requests[0]!;
  assert.equal(req.path, `/2010-04-01/Accounts/${twilio.accountSid}/Messages.json`);
  assert.equal(
    req.headers.authorization,
    `Basic ${Buffer.from(`${twilio.accountSid}:${twilio.authToken}`).toString('base64')}`,
  );
  assert.equal(sent.externalId, got.sid);
  assert.ok(sent.sentAt);
  assert.deepEqual(await updates(m.id), ['sent']);
});

test('sms: 429, 500 and a hung request are retried, then the text is sent once', async (t) => {
  const twilio = await fakeTwilio(t);
  const { open, send, until, updates } = await setup(t, twilioEnv(twilio));
  const { conversation } = await open('sms');
  twilio.failNext({ status: 429, message: 'Too Many Requests' });
  twilio.failNext({ status: 500 });
  twilio.failNext('hang');
  const m = await send(conversation.id, 'Late checkout is fine');
  const sent = await until(conversation.id, m.id, 'sent');
  assert.deepEqual(
    twilio.requests.map((r) => r.answered),
    [429, 500, 'hang', 201],
  );
  assert.equal(twilio.accepted.length, 1);
  assert.equal(sent.externalId, twilio.accepted[0]!.sid);
  assert.equal(sent.error, null);
  assert.deepEqual(await updates(m.id), ['sent']);
});

test('a provider that never answers is given up on at the send timeout, however often memory is collected', async (t) => {
  // A garbage collection while a request hangs must not lose the timeout that ends it (on Node 20
  // a combined AbortSignal could be collected mid-request, and the send then hung for good).
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  const twilio = await fakeTwilio(t);
  const { open, send, until } = await setup(t, twilioEnv(twilio));
  const { conversation } = await open('sms');
  twilio.failNext('hang', 2);
  const m = await send(conversation.id, 'Are you there?');
  const collecting = setInterval(gc, 20);
  try {
    const sent = await until(conversation.id, m.id, 'sent');
    assert.equal(sent.externalId, twilio.accepted[0]!.sid);
  } finally {
    clearInterval(collecting);
  }
  assert.deepEqual(
    twilio.requests.map((r) => r.answered),
    ['hang', 'hang', 201],
  );
});

test("sms: a 400 fails the text with Twilio's message, and it is not tried again", async (t) => {
  const twilio = await fakeTwilio(t);
  const { open, send, until, updates, retry } = await setup(t, twilioEnv(twilio));
  const { conversation } = await open('sms');
  twilio.failNext({ status: 400, code: 21211, message: "The 'To' number +3519 is not a valid phone number." });
  const m = await send(conversation.id, 'Hello');
  const failed = await until(conversation.id, m.id, 'failed');
  assert.equal(failed.error.code, 'PROVIDER_REJECTED');
  assert.match(failed.error.message, /21211 The 'To' number \+3519 is not a valid phone number\./);
  assert.equal(failed.externalId, null);
  // The next text of the conversation goes; the refused one was tried once.
  const next = await send(conversation.id, 'Second try, different text');
  await until(conversation.id, next.id, 'sent');
  assert.equal(twilio.requests.length, 2);
  assert.deepEqual(await updates(m.id), ['failed']);
  // Retry: sent now, as the same message.
  assert.equal((await retry(conversation.id, m.id)).status, 200);
  const sent = await until(conversation.id, m.id, 'sent');
  assert.equal(sent.externalId, twilio.accepted[1]!.sid);
  assert.equal(twilio.accepted[1]!.form.Body, 'Hello');
  assertForward(await updates(m.id));
});

test('texts leave at once without waiting for the poll: first messages, a queue behind a send, a retry', async (t) => {
  // A poll a minute apart: every text here must be sent because the instance that wrote it claimed
  // it at birth or was told it was queued (src/modules/channels/dispatcher.ts), not by the poll.
  const twilio = await fakeTwilio(t);
  const { app, admin, open, send, until, retry } = await setup(t, {
    ...twilioEnv(twilio),
    CHANNEL_POLL_INTERVAL_MS: '60000',
  });
  const { conversation: first } = await open('sms', { content: 'Welcome to the hotel' });
  const { conversation } = await open('sms');
  twilio.failNext({ status: 400, code: 21211, message: 'Invalid To number' });
  const refused = await send(conversation.id, 'Refused first');
  await until(conversation.id, refused.id, 'failed');
  // Written back to back: the later ones find an earlier send pending and wait for it.
  const queued = await Promise.all([send(conversation.id, 'one'), send(conversation.id, 'two')]);
  const third = await send(conversation.id, 'three');
  for (const m of [...queued, third]) await until(conversation.id, m.id, 'sent');
  assert.equal((await retry(conversation.id, refused.id)).status, 200);
  await until(conversation.id, refused.id, 'sent');
  const welcome = (await call(app, 'GET', `/conversations/${first.id}/messages`, { token: admin.token })).data;
  await until(first.id, welcome[0].id, 'sent');
  const bodies = twilio.accepted.map((m) => m.form.Body);
  assert.equal(bodies.length, 5, JSON.stringify(bodies));
  const rest = bodies.filter((b) => b !== 'Welcome to the hotel');
  assert.deepEqual([...rest.slice(0, 2)].sort(), ['one', 'two']);
  assert.deepEqual(rest.slice(2), ['three', 'Refused first']);
});

test('sms: a provider that keeps failing ends failed after the last attempt, with its reason', async (t) => {
  const twilio = await fakeTwilio(t);
  const { open, send, until } = await setup(t, { ...twilioEnv(twilio), CHANNEL_MAX_ATTEMPTS: '3' });
  const { conversation } = await open('sms');
  twilio.failNext({ status: 503, message: 'Service unavailable' }, 3);
  const m = await send(conversation.id, 'Hello');
  const failed = await until(conversation.id, m.id, 'failed');
  assert.equal(failed.error.code, 'PROVIDER_503');
  assert.match(failed.error.message, /Service unavailable/);
  assert.equal(twilio.requests.length, 3);
});

// ---------------------------------------------------------------------------------------------
// WhatsApp

test('whatsapp: Meta Cloud API receives the text as JSON with the bearer token; the wamid is the externalId', async (t) => {
  const meta = await fakeMeta(t);
  const { open, send, until, updates, writesViaMeta } = await setup(t, {
    ...metaEnv(meta),
    WHATSAPP_APP_SECRET: META_SECRET,
  });
  const { conversation, guest } = await open('whatsapp');
  await writesViaMeta(guest.phone!);
  meta.failNext({ status: 500, message: 'Service temporarily unavailable' });
  meta.failNext('hang');
  const m = await send(conversation.id, 'Olá! O seu quarto está pronto.');
  const sent = await until(conversation.id, m.id, 'sent');
  assert.deepEqual(
    meta.requests.map((r) => r.answered),
    [500, 'hang', 200],
  );
  assert.equal(meta.accepted.length, 1);
  const got = meta.accepted[0]!;
  assert.deepEqual(got.body, {
    messaging_product: 'whatsapp',
    recipient_type: 'individual',
    to: guest.phone!.slice(1),
    type: 'text',
    text: { body: 'Olá! O seu quarto está pronto.', preview_url: false },
  });
  const req = meta.requests.at(-1)!;
  assert.equal(req.path, `/${meta.phoneNumberId}/messages`);
  assert.equal(req.headers.authorization, `Bearer ${meta.accessToken}`);
  assert.match(String(req.headers['content-type']), /^application\/json/);
  assert.equal(sent.externalId, got.wamid);
  assert.deepEqual(await updates(m.id), ['sent']);

  meta.failNext({ status: 400, code: 131026, message: 'Message undeliverable' });
  const bad = await send(conversation.id, 'Second');
  const failed = await until(conversation.id, bad.id, 'failed');
  assert.equal(failed.error.code, 'PROVIDER_REJECTED');
  assert.match(failed.error.message, /131026 Message undeliverable/);
});

test('whatsapp: a template goes to Meta by name and language with its parameters, at any time', async (t) => {
  const meta = await fakeMeta(t);
  const { app, admin, open, until, putTemplates, sendTemplate, retry } = await setup(t, metaEnv(meta));
  await putTemplates();
  // This guest never wrote on WhatsApp: free text is refused, a template goes.
  const { conversation, guest } = await open('whatsapp');
  const free = await call(app, 'POST', `/conversations/${conversation.id}/messages`, {
    token: admin.token,
    body: { content: 'free text' },
  });
  assertError(free, 409, 'CONFLICT', 'outside the 24-hour window');
  assert.match(free.body.error.message, /24-hour window/);

  meta.failNext({ status: 400, code: 131008, message: 'Required parameter is missing' });
  const m = await sendTemplate(conversation.id, { name: 'room_ready', language: 'en_US', parameters: ['Ana', '412'] });
  assert.equal(m.content, 'Hello Ana, room 412 is ready.');
  await until(conversation.id, m.id, 'failed');
  // A retry sends the template again, not its text.
  assert.equal((await retry(conversation.id, m.id)).status, 200);
  const sent = await until(conversation.id, m.id, 'sent');
  const none = await sendTemplate(conversation.id, { name: 'welcome', language: 'en_US' });
  await until(conversation.id, none.id, 'sent');

  assert.equal(meta.accepted.length, 2);
  assert.equal(sent.externalId, meta.accepted[0]!.wamid);
  const expected = (template: object) => ({
    messaging_product: 'whatsapp',
    recipient_type: 'individual',
    to: guest.phone!.slice(1),
    type: 'template',
    template,
  });
  for (const r of meta.requests.slice(0, 2)) {
    assert.deepEqual(
      JSON.parse(r.body),
      expected({
        name: 'room_ready',
        language: { code: 'en_US' },
        components: [
          {
            type: 'body',
            parameters: [
              { type: 'text', text: 'Ana' },
              { type: 'text', text: '412' },
            ],
          },
        ],
      }),
    );
  }
  assert.deepEqual(
    meta.accepted[1]!.body,
    expected({ name: 'welcome', language: { code: 'en_US' }, components: [{ type: 'body', parameters: [] }] }),
  );
});

test('whatsapp: through Twilio with whatsapp: addresses when only TWILIO_WHATSAPP_FROM is set', async (t) => {
  const twilio = await fakeTwilio(t);
  const { open, send, until, settled, writesViaTwilio, putTemplates, sendTemplate } = await setup(
    t,
    twilioEnv(twilio, { whatsapp: true }),
  );
  const { conversation, guest } = await open('whatsapp');
  await writesViaTwilio(guest.phone!, twilio.authToken);
  const m = await send(conversation.id, 'Your taxi is here');
  const sent = await until(conversation.id, m.id, 'sent');
  assert.equal(twilio.accepted.length, 1);
  assert.deepEqual(twilio.accepted[0]!.form, {
    To: `whatsapp:${guest.phone}`,
    From: `whatsapp:${WHATSAPP_FROM}`,
    Body: 'Your taxi is here',
    StatusCallback: `${PUBLIC_URL}/api/v1/channels/twilio/status`,
  });
  assert.equal(sent.externalId, twilio.accepted[0]!.sid);
  // A template goes through Twilio as its filled body.
  await putTemplates();
  const tm = await sendTemplate(conversation.id, { name: 'room_ready', language: 'en_US', parameters: ['Ana', '7'] });
  await until(conversation.id, tm.id, 'sent');
  assert.equal(twilio.accepted[1]!.form.Body, 'Hello Ana, room 7 is ready.');
  assert.equal(twilio.accepted[1]!.form.To, `whatsapp:${guest.phone}`);

  // SMS has no sender number here: not configured, and nothing reaches Twilio.
  const sms = await open('sms');
  const s = await send(sms.conversation.id, 'Not over SMS');
  const failed = await settled(sms.conversation.id, s.id);
  assert.equal(failed.deliveryStatus, 'failed');
  assert.equal(failed.error.code, 'CHANNEL_NOT_CONFIGURED');
  assert.equal(twilio.requests.length, 2);
});

// ---------------------------------------------------------------------------------------------
// Order and exactly-once

test('texts of a conversation reach the provider in the order they were written, even across a retry', async (t) => {
  const twilio = await fakeTwilio(t);
  const { open, send, until } = await setup(t, twilioEnv(twilio));
  const a = await open('sms');
  const b = await open('sms');
  // The first text of `a` is refused twice: the rest of `a` waits for it, `b` does not.
  twilio.failNext({ status: 500 }, 2);
  const sentA: { id: string }[] = [];
  const sentB: { id: string }[] = [];
  for (let i = 0; i < 6; i++) {
    sentA.push(await send(a.conversation.id, `a${i}`));
    sentB.push(await send(b.conversation.id, `b${i}`));
  }
  for (const m of sentA) await until(a.conversation.id, m.id, 'sent');
  for (const m of sentB) await until(b.conversation.id, m.id, 'sent');
  const bodies = (to: string | null) => twilio.accepted.filter((m) => m.form.To === to).map((m) => m.form.Body);
  assert.deepEqual(bodies(a.guest.phone), ['a0', 'a1', 'a2', 'a3', 'a4', 'a5']);
  assert.deepEqual(bodies(b.guest.phone), ['b0', 'b1', 'b2', 'b3', 'b4', 'b5']);
  assert.equal(twilio.requests.length, 14);
});

test('texts posted at the same time leave in the order the conversation lists them', async (t) => {
  const twilio = await fakeTwilio(t);
  const { app, admin, open, until } = await setup(t, twilioEnv(twilio));
  const { conversation } = await open('sms');
  const posted = await Promise.all(
    Array.from({ length: 16 }, (_, i) =>
      call(app, 'POST', `/conversations/${conversation.id}/messages`, {
        token: admin.token,
        body: { content: `burst ${i}` },
      }),
    ),
  );
  assert.ok(posted.every((r) => r.status === 201));
  for (const r of posted) await until(conversation.id, r.data.id, 'sent');
  const list = await call(app, 'GET', `/conversations/${conversation.id}/messages?limit=100`, { token: admin.token });
  assert.deepEqual(
    twilio.accepted.map((m) => m.form.Body),
    list.data.map((m: { content: string }) => m.content),
  );
});

test('texts that finish together are recorded together, each with its own outcome and one event', async (t) => {
  const twilio = await fakeTwilio(t);
  // The fake answers every request at once: no attempt here may time out. A timeout (2 s in the
  // fast timings) can still fire on a loaded machine when 24 sends and their polls stall the event
  // loop past it, and the retry of an answered text would be counted as a second send.
  const { open, send, settled, updates } = await setup(t, { ...twilioEnv(twilio), CHANNEL_SEND_TIMEOUT_MS: '60000' });
  const conversations = await Promise.all([open('sms'), open('sms'), open('sms'), open('sms')]);
  // The first text Twilio sees is refused for good: its outcome, recorded in the same batch as
  // its neighbours' (src/modules/channels/dispatcher.ts), must not change theirs.
  twilio.failNext({ status: 400, code: 21211, message: 'Invalid To number' }, 1);
  const sent = await Promise.all(
    Array.from({ length: 24 }, (_, i) => {
      const { conversation } = conversations[i % 4]!;
      return send(conversation.id, `batch ${i}`).then((m) => ({ conversationId: conversation.id, id: m.id }));
    }),
  );
  const outcomes = await Promise.all(sent.map((m) => settled(m.conversationId, m.id)));
  const failed = outcomes.filter((m) => m.deliveryStatus === 'failed');
  assert.equal(failed.length, 1, JSON.stringify(outcomes.map((m) => m.deliveryStatus)));
  assert.equal(outcomes.filter((m) => m.deliveryStatus === 'sent').length, 23);
  assert.equal(twilio.accepted.length, 23);
  for (const m of outcomes) assert.deepEqual(await updates(m.id), [m.deliveryStatus], m.id);
});

test('two app instances on one store send every text exactly once, in order per conversation', async (t) => {
  const twilio = await fakeTwilio(t);
  // Closed before the database goes (after-hooks run in registration order).
  const apps: FastifyInstance[] = [];
  t.after(() => Promise.all(apps.map((a) => a.close())));
  const env = {
    NODE_ENV: 'test',
    LOG_LEVEL: 'silent',
    JWT_SECRET,
    ...redisEnv(),
    ...FAST_CHANNELS,
    ...twilioEnv(twilio),
    DATABASE_URL: await freshDatabaseUrl(t),
  };
  apps.push(await buildApp(loadConfig(env)));
  apps.push(await buildApp(loadConfig(env)));
  const [one, two] = apps as [FastifyInstance, FastifyInstance];
  const admin = await createStaff(one, 'admin');
  const a1 = actions(one, admin);
  const a2 = actions(two, admin);
  const conversations = await Promise.all([a1.open('sms'), a1.open('sms'), a2.open('sms'), a2.open('sms')]);
  // A few 500s make both instances retry while the other may be claiming.
  twilio.failNext({ status: 500 }, 3);
  const written: { conversation: string; id: string; content: string }[] = [];
  // Each conversation is written through both instances, its texts one after another.
  await Promise.all(
    conversations.map(async ({ conversation }, c) => {
      for (let i = 0; i < 8; i++) {
        const via = (c + i) % 2 === 0 ? a1 : a2;
        const m = await via.send(conversation.id, `c${c} m${i}`);
        written.push({ conversation: conversation.id, id: m.id, content: `c${c} m${i}` });
      }
    }),
  );
  for (const w of written) await a1.until(w.conversation, w.id, 'sent');
  const bodies = twilio.accepted.map((m) => m.form.Body);
  assert.equal(bodies.length, written.length, `each text once: ${bodies}`);
  assert.equal(new Set(bodies).size, written.length);
  for (const [c, { guest }] of conversations.entries()) {
    assert.deepEqual(
      twilio.accepted.filter((m) => m.form.To === guest.phone).map((m) => m.form.Body),
      Array.from({ length: 8 }, (_, i) => `c${c} m${i}`),
    );
  }
  // Each message's externalId is the sid Twilio gave it.
  const sids = new Map(twilio.accepted.map((m) => [m.form.Body, m.sid]));
  for (const w of written) {
    const m = await call(one, 'GET', `/conversations/${w.conversation}/messages/${w.id}`, { token: admin.token });
    assert.equal(m.data.externalId, sids.get(w.content));
  }
});

test('an instance closing mid-send hands the text back at once: the next one sends it without waiting', async (t) => {
  const twilio = await fakeTwilio(t);
  const apps: FastifyInstance[] = [];
  t.after(() => Promise.all(apps.map((a) => a.close())));
  const env = {
    NODE_ENV: 'test',
    LOG_LEVEL: 'silent',
    JWT_SECRET,
    ...redisEnv(),
    ...FAST_CHANNELS,
    ...twilioEnv(twilio),
    // A send (and so a claim) that would outlast the test if the claim were not handed back.
    CHANNEL_SEND_TIMEOUT_MS: '60000',
    DATABASE_URL: await freshDatabaseUrl(t),
  };
  const first = await buildApp(loadConfig(env));
  apps.push(first);
  const admin = await createStaff(first, 'admin');
  const { open, send } = actions(first, admin);
  const { conversation } = await open('sms');
  twilio.failNext('hang');
  const m = await send(conversation.id, 'Sent by whoever is up');
  await until('the send reaches the provider', () => twilio.requests.length === 1);
  await first.close();
  const second = await buildApp(loadConfig(env));
  apps.push(second);
  const sent = await actions(second, admin).until(conversation.id, m.id, 'sent');
  assert.equal(twilio.accepted.length, 1);
  assert.equal(sent.externalId, twilio.accepted[0]!.sid);
  assert.deepEqual(
    twilio.requests.map((r) => r.answered),
    ['hang', 201],
  );
});

// ---------------------------------------------------------------------------------------------
// Without providers, dry run, notes, web

test('no provider configured: the text is stored and fails with CHANNEL_NOT_CONFIGURED', async (t) => {
  const { open, send, settled, updates, putTemplates, sendTemplate } = await setup(t, {});
  await putTemplates();
  for (const channel of ['email', 'sms', 'whatsapp'] as const) {
    const { conversation } = await open(channel);
    // WhatsApp: a template (free text is refused outside the 24-hour window, before delivery).
    const m =
      channel === 'whatsapp'
        ? await sendTemplate(conversation.id, { name: 'welcome', language: 'en_US' })
        : await send(conversation.id, `over ${channel}`);
    const failed = await settled(conversation.id, m.id);
    assert.equal(failed.deliveryStatus, 'failed', channel);
    assert.equal(failed.error.code, 'CHANNEL_NOT_CONFIGURED', channel);
    assert.match(failed.error.message, new RegExp(channel));
    assert.deepEqual(await updates(m.id), ['failed']);
  }
});

test('CHANNELS_DRY_RUN marks texts sent and sends nothing, even with providers configured', async (t) => {
  const smtp = await fakeSmtp(t);
  const twilio = await fakeTwilio(t);
  const meta = await fakeMeta(t);
  const { open, send, until, updates, putTemplates, sendTemplate } = await setup(t, {
    CHANNELS_DRY_RUN: 'true',
    ...smtpEnv(smtp),
    ...twilioEnv(twilio),
    ...metaEnv(meta),
  });
  await putTemplates();
  for (const channel of ['email', 'sms', 'whatsapp'] as const) {
    const { conversation } = await open(channel);
    const m =
      channel === 'whatsapp'
        ? await sendTemplate(conversation.id, { name: 'welcome', language: 'en_US' })
        : await send(conversation.id, `dry ${channel}`);
    const sent = await until(conversation.id, m.id, 'sent');
    assert.ok(sent.externalId, channel);
    assert.ok(sent.sentAt, channel);
    assert.deepEqual(await updates(m.id), ['sent']);
  }
  assert.equal(smtp.attempts(), 0);
  assert.equal(twilio.requests.length, 0);
  assert.equal(meta.requests.length, 0);
});

test('a note never leaves; a web text is sent at once', async (t) => {
  const twilio = await fakeTwilio(t);
  const { app, admin, open, send, until, updates } = await setup(t, twilioEnv(twilio));
  const { conversation } = await open('sms');
  const note = await send(conversation.id, 'VIP: upgrade if possible', 'note');
  assert.equal(note.deliveryStatus, 'delivered');
  const text = await send(conversation.id, 'Welcome');
  await until(conversation.id, text.id, 'sent');
  assert.deepEqual(
    twilio.accepted.map((m) => m.form.Body),
    ['Welcome'],
  );
  assert.deepEqual(await updates(note.id), []);
  const noteNow = await call(app, 'GET', `/conversations/${conversation.id}/messages/${note.id}`, {
    token: admin.token,
  });
  assert.equal(noteNow.data.deliveryStatus, 'delivered');
  assert.equal(noteNow.data.externalId, null);

  const web = await open('web');
  const w = await send(web.conversation.id, 'Hi from the front desk');
  assert.equal(w.deliveryStatus, 'sent');
  const got = await call(app, 'GET', `/conversations/${web.conversation.id}/messages/${w.id}`, { token: admin.token });
  assert.equal(got.data.deliveryStatus, 'sent');
  assert.equal(got.data.sentAt, got.data.createdAt);
  assert.deepEqual(await updates(w.id), []);
  // The first text of a conversation created with content goes the same way.
  const withFirst = await call(app, 'POST', '/conversations', {
    token: admin.token,
    body: { guestId: (await open('sms')).guest.id, channel: 'sms', content: 'First words' },
  });
  assert.equal(withFirst.status, 201);
  const first = (await call(app, 'GET', `/conversations/${withFirst.data.id}/messages`, { token: admin.token }))
    .data[0];
  await until(withFirst.data.id, first.id, 'sent');
  assert.ok(twilio.accepted.some((m) => m.form.Body === 'First words'));
  assert.equal(twilio.accepted.length, 2);
});

test('a conversation on a channel the guest has no address for is a VALIDATION_ERROR naming the channel', async (t) => {
  const { app, admin, guest } = await setup(t, {});
  const noPhone = await guest({ phone: null });
  const noEmail = await guest({ email: null });
  const cases: [string, string][] = [
    [noPhone.id, 'sms'],
    [noPhone.id, 'whatsapp'],
    [noEmail.id, 'email'],
  ];
  for (const [guestId, channel] of cases) {
    const res = await call(app, 'POST', '/conversations', { token: admin.token, body: { guestId, channel } });
    assertError(res, 400, 'VALIDATION_ERROR', channel);
    assert.ok(
      res.body.error.details.some((d: { field: string; message: string }) => d.field === 'channel'),
      JSON.stringify(res.body),
    );
  }
  for (const [guestId, channel] of [
    [noPhone.id, 'email'],
    [noEmail.id, 'sms'],
    [noPhone.id, 'web'],
  ]) {
    const res = await call(app, 'POST', '/conversations', { token: admin.token, body: { guestId, channel } });
    assert.equal(res.status, 201, `${channel} ${JSON.stringify(res.body)}`);
  }
});
