// A text reaches a guest at most once per send the API decides on (CONTRACT §16), against real
// servers on loopback: a provider's 2xx without an id is accepted; an SMTP server that answers
// late is waited for, and a message it never answers is not sent again.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fakeMeta, fakeSmtp, fakeTwilio, metaEnv, smtpEnv, twilioEnv, until as waitFor } from './fakes.js';
import { setup } from './outbound-actions.js';
import { META_SECRET } from './signing.js';

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

test('e-mail: a session stalled before the message is transmitted is closed at the send timeout and retried', async (t) => {
  const smtp = await fakeSmtp(t);
  const { open, send, until } = await setup(t, { ...smtpEnv(smtp), CHANNEL_SEND_TIMEOUT_MS: '300' });
  const { conversation } = await open('email');
  smtp.stallNext();
  const m = await send(conversation.id, 'Your room is ready.');
  await until(conversation.id, m.id, 'sent');
  assert.equal(smtp.received.length, 1);
  assert.equal(smtp.attempts(), 1, 'one DATA: the stalled session never got that far');
  assert.equal(smtp.sessions().opened, 2);
  await waitFor('both sessions are closed', () => smtp.sessions().open === 0);
});
