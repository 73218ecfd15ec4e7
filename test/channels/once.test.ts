// A text reaches a guest at most once per send the API decides on (docs/channels.md, "Sent once"), against real
// servers on loopback: a provider's 2xx without an id is accepted; an outcome the store refuses is
// recorded again under a renewed lease, never sent again, and a crash loop ends `failed`; an SMTP
// server that answers late is waited for; a hanging provider delays only its own channel; a retry
// releases the old provider id; a status that outruns the recording of `sent` is kept and applied.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { call, createStaff, freshDatabaseUrl, JWT_SECRET, redisEnv } from '../helpers.js';
import {
  FAST_CHANNELS,
  fakeMeta,
  fakeSmtp,
  fakeTwilio,
  metaEnv,
  PUBLIC_URL,
  smtpEnv,
  twilioEnv,
  until as waitFor,
} from './fakes.js';
import { actions, setup } from './outbound-actions.js';
import { META_SECRET, metaPayload, postMeta, twilioSign } from './signing.js';

/**
 * Makes the store refuse every change of a message to `sent` (a trigger raising an error, as a
 * transient failure of the store would) until the returned function is called.
 */
async function refuseSent(app: FastifyInstance): Promise<() => Promise<void>> {
  const db = app.ctx.store.db;
  if (app.ctx.store.dialect === 'postgres') {
    await sql`create function refuse_sent() returns trigger language plpgsql as $$
      begin raise exception 'the store refuses this write (test)'; end $$`.execute(db);
    await sql`create trigger refuse_sent before update on messages for each row
      when (new.delivery_status = 'sent') execute function refuse_sent()`.execute(db);
    return async () => {
      await sql`drop trigger refuse_sent on messages`.execute(db);
      await sql`drop function refuse_sent()`.execute(db);
    };
  }
  await sql`create trigger refuse_sent before update of delivery_status on messages
    when new.delivery_status = 'sent' begin select raise(abort, 'the store refuses this write (test)'); end`.execute(
    db,
  );
  return async () => void (await sql`drop trigger refuse_sent`.execute(db));
}

/** A signed Twilio status callback. */
function twilioStatus(app: FastifyInstance, authToken: string, params: Record<string, string>) {
  const path = '/api/v1/channels/twilio/status';
  return call(app, 'POST', path, {
    body: new URLSearchParams(params).toString(),
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      'x-twilio-signature': twilioSign(PUBLIC_URL + path, params, authToken),
    },
  });
}

test('a provider 2xx without an id is accepted: the text is sent with a null externalId, never again', async (t) => {
  const twilio = await fakeTwilio(t);
  const meta = await fakeMeta(t);
  const { open, send, until, updates, writesViaMeta } = await setup(t, {
    ...twilioEnv(twilio),
    ...metaEnv(meta),
    WHATSAPP_APP_SECRET: META_SECRET,
  });

  const { conversation: sms } = await open('sms');
  twilio.failNext('no-id');
  const text = await send(sms.id, 'Your room is ready');
  const sent = await until(sms.id, text.id, 'sent');
  assert.equal(sent.externalId, null);
  assert.ok(sent.sentAt);
  assert.equal(sent.error, null);
  // A later text of the conversation goes out, so the first one is settled, not waiting for a retry.
  const later = await send(sms.id, 'Breakfast is until 10');
  await until(sms.id, later.id, 'sent');
  assert.deepEqual(
    twilio.requests.map((r) => [new URLSearchParams(r.body).get('Body'), r.answered]),
    [
      ['Your room is ready', 'no-id'],
      ['Breakfast is until 10', 201],
    ],
  );
  assert.deepEqual(await updates(text.id), ['sent']);

  const { conversation: wa, guest } = await open('whatsapp');
  await writesViaMeta(guest.phone!);
  meta.failNext('no-id');
  const answer = await send(wa.id, 'Olá!');
  const waSent = await until(wa.id, answer.id, 'sent');
  assert.equal(waSent.externalId, null);
  assert.deepEqual(
    meta.requests.map((r) => r.answered),
    ['no-id'],
  );
});

test('an outcome the store refuses is recorded again under a renewed lease, and the text is not sent again', async (t) => {
  const twilio = await fakeTwilio(t);
  // A lease of 0.8 s: without renewal it would run out while the outcome cannot be recorded, and the
  // text would be claimed and sent again.
  const { app, open, send, until, updates } = await setup(t, {
    ...twilioEnv(twilio),
    CHANNEL_SEND_TIMEOUT_MS: '400',
    CHANNEL_LEASE_MS: '800',
  });
  const { conversation } = await open('sms');
  const allow = await refuseSent(app);
  const m = await send(conversation.id, 'Your taxi is booked');
  await waitFor('the text reaches Twilio', () => twilio.requests.length === 1);
  // Refused for three leases' time.
  await sleep(2400);
  await allow();
  const sent = await until(conversation.id, m.id, 'sent');
  assert.equal(twilio.requests.length, 1, 'sent once');
  assert.equal(sent.externalId, twilio.accepted[0]!.sid);
  assert.deepEqual(await updates(m.id), ['sent']);
});

test('a send whose outcome is never recorded is claimed at most CHANNEL_MAX_ATTEMPTS times, then fails', async (t) => {
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
    CHANNEL_SEND_TIMEOUT_MS: '300',
    CHANNEL_LEASE_MS: '600',
    CHANNEL_MAX_ATTEMPTS: '2',
    DATABASE_URL: await freshDatabaseUrl(t),
  };
  const start = async () => {
    const app = await buildApp(loadConfig(env));
    apps.push(app);
    return app;
  };
  let app = await start();
  const admin = await createStaff(app, 'admin');
  const { conversation } = await actions(app, admin).open('sms');
  // Every instance that sends it stops before it could record `sent` (as a crash would).
  await refuseSent(app);
  const m = await actions(app, admin).send(conversation.id, 'Checkout is at noon');
  for (let attempt = 1; attempt <= 2; attempt++) {
    await waitFor(`attempt ${attempt} reaches Twilio`, () => twilio.requests.length === attempt);
    await app.close();
    app = await start();
  }
  const failed = await actions(app, admin).until(conversation.id, m.id, 'failed');
  assert.equal(failed.error.code, 'ATTEMPTS_EXHAUSTED');
  assert.equal(twilio.requests.length, 2, 'never a third time');
});

test('e-mail: an SMTP server that answers the message late is waited for: one copy, and the text is sent', async (t) => {
  const smtp = await fakeSmtp(t);
  // The final answer comes after the send timeout and after the lease's length: the session is kept
  // (and the lease renewed) until the server answers.
  const { open, send, until, updates } = await setup(t, {
    ...smtpEnv(smtp),
    CHANNEL_SEND_TIMEOUT_MS: '300',
    CHANNEL_LEASE_MS: '700',
  });
  const { conversation } = await open('email');
  smtp.answerLate(1500);
  const m = await send(conversation.id, 'Your invoice is attached.');
  const sent = await until(conversation.id, m.id, 'sent');
  assert.equal(smtp.attempts(), 1);
  assert.equal(smtp.received.length, 1);
  assert.equal(sent.externalId, smtp.received[0]!.messageId);
  assert.deepEqual(await updates(m.id), ['sent']);
  // Nothing else is sent later either.
  const next = await send(conversation.id, 'See you soon.');
  await until(conversation.id, next.id, 'sent');
  assert.equal(smtp.received.length, 2);
});

test('e-mail: a message the server never answers fails with SMTP_NO_ANSWER and is not sent again', async (t) => {
  const smtp = await fakeSmtp(t);
  const { open, send, until, retry } = await setup(t, {
    ...smtpEnv(smtp),
    CHANNEL_SEND_TIMEOUT_MS: '300',
    CHANNEL_SMTP_ANSWER_TIMEOUT_MS: '600',
  });
  const { conversation } = await open('email');
  smtp.refuseNext('hang');
  const m = await send(conversation.id, 'Did this arrive?');
  const failed = await until(conversation.id, m.id, 'failed');
  assert.equal(failed.error.code, 'SMTP_NO_ANSWER');
  assert.match(failed.error.message, /may have been delivered/);
  assert.equal(smtp.attempts(), 1);
  // Sending it anyway is the staff's decision: a retry is a new send.
  assert.equal((await retry(conversation.id, m.id)).status, 200);
  await until(conversation.id, m.id, 'sent');
  assert.equal(smtp.attempts(), 2);
  assert.equal(smtp.received.length, 1);
});

test('e-mail: a session stalled before its message is closed at the send timeout, holding its slot till then, and retried', async (t) => {
  const smtp = await fakeSmtp(t);
  // One slot: the other text's session may open only once the stalled one is closed.
  const { open, send, until } = await setup(t, {
    ...smtpEnv(smtp),
    CHANNEL_SEND_TIMEOUT_MS: '300',
    CHANNEL_CONCURRENCY: '1',
  });
  const { conversation } = await open('email');
  const { conversation: other } = await open('email');
  smtp.stallNext();
  const m = await send(conversation.id, 'Your room is ready.');
  await waitFor('the first session stalls', () => smtp.sessions().opened === 1);
  const n = await send(other.id, 'Your taxi is booked.');
  await until(conversation.id, m.id, 'sent');
  await until(other.id, n.id, 'sent');
  assert.equal(smtp.received.length, 2);
  assert.equal(smtp.attempts(), 2, 'one DATA each: the stalled session never got that far');
  assert.equal(smtp.sessions().opened, 3);
  assert.equal(smtp.sessions().most, 1, 'never two sessions at once');
  await waitFor('every session is closed', () => smtp.sessions().open === 0);
});

test('a hanging SMS provider delays only SMS: e-mail and WhatsApp texts leave meanwhile', async (t) => {
  const twilio = await fakeTwilio(t);
  const smtp = await fakeSmtp(t);
  const meta = await fakeMeta(t);
  const { app, admin, open, send, until, writesViaMeta } = await setup(t, {
    ...twilioEnv(twilio),
    ...smtpEnv(smtp),
    ...metaEnv(meta),
    WHATSAPP_APP_SECRET: META_SECRET,
    // Longer than the test: the hung sends hold their slots until the app closes.
    CHANNEL_SEND_TIMEOUT_MS: '60000',
  });
  // More hung SMS than an instance sends at once (16 per channel).
  twilio.failNext('hang', 20);
  const sms: { conversation: string; id: string }[] = [];
  for (let i = 0; i < 20; i++) {
    const { conversation } = await open('sms');
    sms.push({ conversation: conversation.id, id: (await send(conversation.id, `sms ${i}`)).id });
  }
  await waitFor('16 SMS hang at Twilio', () => twilio.requests.length === 16);
  const { conversation: email } = await open('email');
  const mail = await send(email.id, 'An e-mail while SMS hangs');
  const { conversation: wa, guest } = await open('whatsapp');
  await writesViaMeta(guest.phone!);
  const whatsapp = await send(wa.id, 'A WhatsApp text while SMS hangs');
  const { conversation: web } = await open('web');
  const chat = await send(web.id, 'A web text while SMS hangs');
  await until(email.id, mail.id, 'sent');
  await until(wa.id, whatsapp.id, 'sent');
  await until(web.id, chat.id, 'sent');
  assert.equal(twilio.requests.length, 16, 'SMS still waits for its own slots');
  for (const s of sms) {
    const m = await call(app, 'GET', `/conversations/${s.conversation}/messages/${s.id}`, { token: admin.token });
    assert.equal(m.data.deliveryStatus, 'queued');
  }
});

test('a retry releases the old provider id: a late status for it changes nothing, the new id is stored', async (t) => {
  const twilio = await fakeTwilio(t);
  const { app, open, send, until, retry, updates } = await setup(t, {
    ...twilioEnv(twilio),
    CHANNEL_SEND_TIMEOUT_MS: '500',
  });
  const { conversation } = await open('sms');
  const m = await send(conversation.id, 'Your spa booking is at 4');
  const first = await until(conversation.id, m.id, 'sent');
  const oldSid = first.externalId as string;
  assert.equal(
    (
      await twilioStatus(app, twilio.authToken, {
        MessageSid: oldSid,
        MessageStatus: 'undelivered',
        ErrorCode: '30003',
      })
    ).status,
    204,
  );
  await until(conversation.id, m.id, 'failed');

  // The retry's send hangs a while: it is queued when the old id's late reports arrive.
  twilio.failNext('hang');
  const again = await retry(conversation.id, m.id);
  assert.equal(again.status, 200, JSON.stringify(again.body));
  assert.equal(again.data.externalId, null, 'the old id is released');
  assert.equal(again.data.sentAt, null);
  await waitFor('the retry reaches Twilio', () => twilio.requests.length === 2);
  for (const MessageStatus of ['sent', 'delivered', 'read', 'failed']) {
    const late = await twilioStatus(app, twilio.authToken, { MessageSid: oldSid, MessageStatus, ErrorCode: '30003' });
    assert.equal(late.status, 204);
  }
  const queued = await until(conversation.id, m.id, 'queued');
  assert.equal(queued.externalId, null);

  const sent = await until(conversation.id, m.id, 'sent');
  assert.equal(twilio.accepted.length, 2);
  assert.equal(sent.externalId, twilio.accepted[1]!.sid);
  assert.notEqual(sent.externalId, oldSid);
  assert.deepEqual(await updates(m.id), ['sent', 'failed', 'queued', 'sent']);
  // Reports for the new id apply.
  await twilioStatus(app, twilio.authToken, { MessageSid: sent.externalId, MessageStatus: 'delivered' });
  await until(conversation.id, m.id, 'delivered');
});

test('a status that arrives before its send is recorded is kept, then applied in order once sent', async (t) => {
  const twilio = await fakeTwilio(t);
  const meta = await fakeMeta(t);
  const { app, open, send, until, updates, writesViaMeta } = await setup(t, {
    ...twilioEnv(twilio),
    ...metaEnv(meta),
    WHATSAPP_APP_SECRET: META_SECRET,
  });
  const { conversation: sms } = await open('sms');
  const { conversation: wa, guest } = await open('whatsapp');
  await writesViaMeta(guest.phone!);
  // The provider answered, then reported on the text before its `sent` could be recorded.
  const allow = await refuseSent(app);
  const text = await send(sms.id, 'Your room is ready');
  const answer = await send(wa.id, 'Welcome!');
  await waitFor('both texts reach their providers', () => twilio.accepted.length === 1 && meta.accepted.length === 1);
  const sid = twilio.accepted[0]!.sid!;
  const wamid = meta.accepted[0]!.wamid!;
  assert.equal(
    (await twilioStatus(app, twilio.authToken, { MessageSid: sid, MessageStatus: 'delivered' })).status,
    204,
  );
  const receipt = await postMeta(
    app,
    metaPayload(
      {
        statuses: [
          { id: wamid, status: 'delivered', timestamp: '1764061250', recipient_id: '1' },
          { id: wamid, status: 'read', timestamp: '1764061300', recipient_id: '1' },
        ],
      },
      meta.phoneNumberId,
    ),
  );
  assert.equal(receipt.status, 200, JSON.stringify(receipt.body));
  await allow();

  const delivered = await until(sms.id, text.id, 'delivered');
  assert.equal(delivered.externalId, sid);
  assert.ok(delivered.sentAt && delivered.deliveredAt);
  assert.deepEqual(await updates(text.id), ['sent', 'delivered']);
  const read = await until(wa.id, answer.id, 'read');
  assert.equal(read.externalId, wamid);
  assert.equal(read.deliveredAt, '2025-11-25T09:00:50.000Z');
  assert.equal(read.readAt, '2025-11-25T09:01:40.000Z');
  assert.deepEqual(await updates(answer.id), ['sent', 'delivered', 'read']);
  assert.equal(twilio.requests.length, 1);
  assert.equal(meta.requests.length, 1);
});

test('finished send jobs are purged once kept for 7 days; a retry after that still sends the text', async (t) => {
  const twilio = await fakeTwilio(t);
  const { app, open, send, until, retry } = await setup(t, twilioEnv(twilio));
  const { conversation } = await open('sms');
  twilio.failNext({ status: 400, message: 'Invalid number' }, 2);
  const old = await send(conversation.id, 'Failed long ago');
  await until(conversation.id, old.id, 'failed');
  const recent = await send(conversation.id, 'Failed just now');
  await until(conversation.id, recent.id, 'failed');
  const db = app.ctx.store.db;
  const eightDaysAgo = new Date(Date.now() - 8 * 86_400_000).toISOString();
  await db.updateTable('channel_sends').set({ finished_at: eightDaysAgo }).where('message_id', '=', old.id).execute();
  // A status kept for a text nobody here sent (another system on the number), two days ago.
  await twilioStatus(app, twilio.authToken, { MessageSid: 'SMsomeone-else', MessageStatus: 'delivered' });
  await db.updateTable('channel_statuses').set({ received_at: eightDaysAgo }).execute();

  await app.channelDispatcher.purge();
  const jobs = await db.selectFrom('channel_sends').select('message_id').execute();
  assert.deepEqual(
    jobs.map((j) => j.message_id),
    [recent.id],
  );
  assert.equal((await db.selectFrom('channel_statuses').select('id').execute()).length, 0);

  assert.equal((await retry(conversation.id, old.id)).status, 200);
  const sent = await until(conversation.id, old.id, 'sent');
  assert.equal(sent.externalId, twilio.accepted[0]!.sid);
  assert.equal(twilio.accepted[0]!.form.Body, 'Failed long ago');
});

test('with one slot per channel, texts written at once all leave, each once', async (t) => {
  const twilio = await fakeTwilio(t);
  const { open, send, until } = await setup(t, { ...twilioEnv(twilio), CHANNEL_CONCURRENCY: '1' });
  const conversations = await Promise.all(Array.from({ length: 6 }, () => open('sms')));
  // Written together: several are claimed at birth before any commits, and wait for the one slot.
  const texts = await Promise.all(
    conversations.map(({ conversation }, i) => send(conversation.id, `text ${i}`).then((m) => ({ conversation, m }))),
  );
  for (const { conversation, m } of texts) await until(conversation.id, m.id, 'sent');
  const bodies = twilio.requests.map((r) => new URLSearchParams(r.body).get('Body')).sort();
  assert.deepEqual(
    bodies,
    texts.map((_, i) => `text ${i}`),
  );
});
