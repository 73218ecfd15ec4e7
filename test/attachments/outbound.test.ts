// Files leave with their message: e-mail attaches them, Twilio gets each signed link as MediaUrl,
// Meta's WhatsApp gets one media message per file (audio without a caption, its text after it).
// Observed through what the provider fakes on loopback received.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { fakeMeta, fakeSmtp, fakeTwilio, metaEnv, PUBLIC_URL, smtpEnv, twilioEnv } from '../channels/fakes.js';
import { setup } from '../channels/outbound-actions.js';
import { META_SECRET, twilioSign } from '../channels/signing.js';
import { call } from '../helpers.js';
import { fetchLink, pdf, png, tempStore, upload } from './files.js';

/** An OGG/Opus voice note's first page: enough for the sniffer. */
const ogg = () =>
  Buffer.concat([
    Buffer.from('OggS\u0000\u0002', 'latin1'),
    Buffer.alloc(20),
    Buffer.from('\u0001\u0013OpusHead', 'latin1'),
    Buffer.alloc(64),
  ]);

async function sendWith(app: FastifyInstance, token: string, conversationId: string, body: object) {
  const res = await call(app, 'POST', `/conversations/${conversationId}/messages`, { token, body });
  assert.equal(res.status, 201, res.raw.body);
  return res.data as { id: string };
}

test('e-mail attaches the files of a message', async (t) => {
  const smtp = await fakeSmtp(t);
  const { app, admin, open, until } = await setup(t, { ...smtpEnv(smtp), ...tempStore(t).env });
  const { conversation } = await open('email');
  const bytes = pdf();
  const file = (await upload(app, admin.token, bytes, 'folio.pdf')).data;
  const m = await sendWith(app, admin.token, conversation.id, { content: 'Your folio', attachments: [file.id] });
  await until(conversation.id, m.id, 'sent');
  const mail = smtp.received[0]!;
  assert.equal(mail.text, 'Your folio');
  assert.deepEqual(
    mail.attachments.map((a) => [a.filename, a.contentType]),
    [['folio.pdf', 'application/pdf']],
  );
  assert.deepEqual(mail.attachments[0]!.content, bytes);
});

test('SMS (MMS) gives Twilio each file as a signed MediaUrl under PUBLIC_URL', async (t) => {
  const twilio = await fakeTwilio(t);
  const { app, admin, open, until } = await setup(t, { ...twilioEnv(twilio), ...tempStore(t).env });
  const { conversation } = await open('sms');
  const a = (await upload(app, admin.token, png(), 'a.png')).data;
  const b = (await upload(app, admin.token, png(), 'b.png')).data;
  const m = await sendWith(app, admin.token, conversation.id, { attachments: [a.id, b.id] });
  await until(conversation.id, m.id, 'sent');
  const media = twilio.accepted[0]!.media;
  assert.equal(media.length, 2);
  for (const [i, url] of media.entries()) {
    assert.ok(url.startsWith(`${PUBLIC_URL}/api/v1/attachments/${[a.id, b.id][i]}/content?`), url);
    assert.equal((await fetchLink(app, url)).statusCode, 200, 'the link Twilio fetches serves the file');
  }
});

test('WhatsApp Cloud: one media message per file, the text as the caption; audio goes bare, its text after', async (t) => {
  const meta = await fakeMeta(t);
  const { app, admin, open, until, writesViaMeta } = await setup(t, {
    ...metaEnv(meta),
    WHATSAPP_APP_SECRET: META_SECRET,
    PUBLIC_URL,
    ...tempStore(t).env,
  });
  const { conversation, guest } = await open('whatsapp');
  await writesViaMeta(guest.phone!);
  const photo = (await upload(app, admin.token, png(), 'view.png')).data;
  const doc = (await upload(app, admin.token, pdf(), 'menu.pdf')).data;
  const m = await sendWith(app, admin.token, conversation.id, {
    content: 'Your view and the menu',
    attachments: [photo.id, doc.id],
  });
  const sent = await until(conversation.id, m.id, 'sent');
  const bodies = meta.accepted.map((x) => x.body);
  assert.equal(bodies[0].type, 'image');
  assert.equal(bodies[0].image.caption, 'Your view and the menu');
  assert.ok(bodies[0].image.link.startsWith(`${PUBLIC_URL}/api/v1/attachments/${photo.id}/content?`));
  assert.equal(bodies[1].type, 'document');
  assert.equal(bodies[1].document.filename, 'menu.pdf');
  assert.equal(bodies[1].document.caption, undefined);
  assert.equal(sent.externalId, meta.accepted[0]!.wamid);

  const voice = (await upload(app, admin.token, ogg(), 'note.ogg')).data;
  assert.equal(voice.contentType, 'audio/ogg');
  const v = await sendWith(app, admin.token, conversation.id, { content: 'Listen to this', attachments: [voice.id] });
  await until(conversation.id, v.id, 'sent');
  const [audio, text] = meta.accepted.slice(2).map((x) => x.body);
  assert.equal(audio.type, 'audio');
  assert.equal(audio.audio.caption, undefined);
  assert.deepEqual(text.text, { body: 'Listen to this', preview_url: false });
});

test("a delivery status carries the message's files in its message.updated, as every read does", async (t) => {
  const twilio = await fakeTwilio(t);
  const { app, admin, open, until } = await setup(t, { ...twilioEnv(twilio), ...tempStore(t).env });
  const { conversation } = await open('sms');
  const a = (await upload(app, admin.token, png(), 'a.png')).data;
  const b = (await upload(app, admin.token, pdf(), 'b.pdf')).data;
  const m = await sendWith(app, admin.token, conversation.id, { content: 'Your room', attachments: [a.id, b.id] });
  const sent = await until(conversation.id, m.id, 'sent');
  for (const status of ['delivered', 'read']) {
    const url = '/api/v1/channels/twilio/status';
    const params = { MessageSid: sent.externalId as string, MessageStatus: status };
    const res = await call(app, 'POST', url, {
      body: new URLSearchParams(params).toString(),
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        'x-twilio-signature': twilioSign(PUBLIC_URL + url, params, twilio.authToken),
      },
    });
    assert.equal(res.status, 204, res.raw.body);
  }
  await until(conversation.id, m.id, 'read');
  const events = (await call(app, 'GET', '/events?types=message.updated&limit=100', { token: admin.token })).data as {
    data: { id: string; deliveryStatus: string; attachments: { id: string; url: string | null }[] };
    changes: Record<string, unknown>;
  }[];
  const mine = events.filter((e) => e.data.id === m.id);
  assert.deepEqual(
    mine.map((e) => e.data.deliveryStatus),
    ['sent', 'delivered', 'read'],
  );
  for (const e of mine) {
    assert.deepEqual(
      e.data.attachments.map((x) => x.id),
      [a.id, b.id],
      `${e.data.deliveryStatus} carries the files`,
    );
    assert.ok(e.data.attachments[0]!.url?.startsWith(`${PUBLIC_URL}/api/v1/attachments/${a.id}/content?`));
    assert.equal(e.changes.attachments, undefined, 'a status change does not change the files');
  }

  // A text Twilio refuses fails, and a retry queues it again: both events carry its files too.
  twilio.failNext({ status: 400, code: 21211, message: 'not a valid phone number' });
  const refused = await sendWith(app, admin.token, conversation.id, { attachments: [b.id] });
  await until(conversation.id, refused.id, 'failed');
  const retried = await call(app, 'POST', `/conversations/${conversation.id}/messages/${refused.id}/retry`, {
    token: admin.token,
  });
  assert.equal(retried.status, 200, retried.raw.body);
  assert.equal(retried.data.attachments.length, 1);
  await until(conversation.id, refused.id, 'sent');
  const later = (await call(app, 'GET', '/events?types=message.updated&limit=100', { token: admin.token })).data as {
    data: { id: string; deliveryStatus: string; attachments: { id: string }[] };
    changes: Record<string, unknown>;
  }[];
  const again = later.filter((e) => e.data.id === refused.id);
  assert.deepEqual(
    again.map((e) => [e.data.deliveryStatus, e.data.attachments.length, e.changes.attachments]),
    [
      ['failed', 1, undefined],
      ['queued', 1, undefined],
      ['sent', 1, undefined],
    ],
  );
});
