// Files guests send arrive with their message, `pending`, and are fetched after commit: Twilio's
// media with the account's Basic auth, WhatsApp's through the Graph API with the bearer token,
// e-mail parts from the message itself, the web widget's as uploads; each then `stored` (its
// link serving it) or `failed` with the reason, each change a message.updated.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { fakeMeta, fakeTwilio, until } from '../channels/fakes.js';
import {
  EMAIL_SECRET,
  INBOUND_ENV,
  META_SECRET,
  metaPayload,
  PUBLIC_URL,
  postEmail,
  postMeta,
  postTwilio,
  TWILIO_SMS_NUMBER,
  twilioSign,
} from '../channels/signing.js';
import { buildTestApp, call, createStaff, type TestUser } from '../helpers.js';
import { fetchLink, pdf, png, tempStore, upload } from './files.js';

type Message = {
  id: string;
  conversationId: string;
  content: string;
  attachments: { id: string; status: string; contentType: string | null; url: string | null; error: unknown }[];
};

/** The latest message of the guest with this phone or e-mail, through the API. */
async function latestOf(app: FastifyInstance, admin: TestUser, search: string): Promise<Message> {
  const guest = (await call(app, 'GET', `/guests?search=${encodeURIComponent(search)}`, { token: admin.token }))
    .data[0];
  const c = (await call(app, 'GET', '/conversations?limit=100', { token: admin.token })).data.find(
    (x: { guestId: string }) => x.guestId === guest.id,
  );
  const list = await call(app, 'GET', `/conversations/${c.id}/messages?limit=100`, { token: admin.token });
  return list.data.at(-1);
}

/** The message once none of its files is pending. */
async function settled(app: FastifyInstance, admin: TestUser, search: string): Promise<Message> {
  let m: Message | undefined;
  await until('the files settled', async () => {
    m = await latestOf(app, admin, search);
    return m.attachments.every((a) => a.status !== 'pending');
  });
  return m!;
}

async function updatesOf(app: FastifyInstance, admin: TestUser, messageId: string) {
  const res = await call(app, 'GET', '/events?types=message.updated&limit=100', { token: admin.token });
  return (res.data as { data: Message }[]).filter((e) => e.data.id === messageId).map((e) => e.data);
}

test('Twilio MMS media are fetched with the account’s Basic auth; a refused type fails with its reason', async (t) => {
  const twilio = await fakeTwilio(t);
  const app = await buildTestApp(t, {
    ...INBOUND_ENV,
    ...tempStore(t).env,
    TWILIO_ACCOUNT_SID: twilio.accountSid,
    TWILIO_AUTH_TOKEN: twilio.authToken,
    TWILIO_API_URL: twilio.base,
  });
  const admin = await createStaff(app, 'admin');
  const photo = png();
  const form = {
    MessageSid: 'SM11111111111111111111111111111111',
    From: '+351910000123',
    To: TWILIO_SMS_NUMBER,
    Body: 'Look at this',
    NumMedia: '2',
    MediaUrl0: twilio.addMedia(photo, 'image/png'),
    MediaContentType0: 'image/png',
    MediaUrl1: twilio.addMedia(Buffer.from('<html><body>hi</body></html>'), 'text/html'),
    MediaContentType1: 'text/html',
  };
  const url = '/api/v1/channels/twilio/inbound';
  const res = await postTwilio(app, 'inbound', form, twilioSign(PUBLIC_URL + url, form, twilio.authToken));
  assert.equal(res.status, 200, res.raw.body);

  const m = await settled(app, admin, '+351910000123');
  assert.deepEqual(
    m.attachments.map((a) => [a.status, a.contentType]),
    [
      ['stored', 'image/png'],
      ['failed', 'text/html'],
    ],
  );
  assert.equal((m.attachments[1]!.error as { code: string }).code, 'ATTACHMENT_TYPE_REFUSED');
  const got = await fetchLink(app, m.attachments[0]!.url!);
  assert.deepEqual(got.rawPayload, photo);
  const fetched = twilio.requests.filter((r) => r.method === 'GET');
  assert.equal(fetched.length, 2);
  assert.ok(fetched.every((r) => r.headers.authorization?.startsWith('Basic ')));
  // Recorded pending with the message, then one message.updated per file settled.
  const updates = await updatesOf(app, admin, m.id);
  assert.equal(updates.length, 2);
  assert.equal(updates[0]!.attachments.filter((a) => a.status === 'pending').length, 1, 'one file settled first');
  assert.deepEqual(
    updates[1]!.attachments.map((a) => a.status),
    ['stored', 'failed'],
  );
});

test('WhatsApp media are resolved through the Graph API and downloaded with the bearer token, retried on 5xx', async (t) => {
  const meta = await fakeMeta(t);
  const app = await buildTestApp(t, {
    ...INBOUND_ENV,
    ...tempStore(t).env,
    WHATSAPP_ACCESS_TOKEN: meta.accessToken,
    WHATSAPP_PHONE_NUMBER_ID: meta.phoneNumberId,
    WHATSAPP_API_URL: meta.base,
    WHATSAPP_APP_SECRET: META_SECRET,
  });
  // The fetch job's backoff starts at a second (docs/jobs.md); short enough here.
  const admin = await createStaff(app, 'admin');
  const doc = pdf();
  const mediaId = meta.addMedia(doc, 'application/pdf');
  const payload = metaPayload(
    {
      contacts: [{ profile: { name: 'Rui' }, wa_id: '351910000456' }],
      messages: [
        {
          from: '351910000456',
          id: 'wamid.media1',
          timestamp: '1795000000',
          type: 'document',
          document: { id: mediaId, mime_type: 'application/pdf', filename: 'passport.pdf', caption: 'my passport' },
        },
      ],
    },
    meta.phoneNumberId,
  );
  meta.failNext({ status: 503 });
  assert.equal((await postMeta(app, payload)).status, 200);
  const m = await settled(app, admin, '+351910000456');
  assert.equal(m.content, '[document] my passport');
  assert.equal(m.attachments[0]!.status, 'stored');
  assert.equal(m.attachments[0]!.contentType, 'application/pdf');
  const record = await call(app, 'GET', `/attachments/${m.attachments[0]!.id}`, { token: admin.token });
  assert.equal(record.data.filename, 'passport.pdf');
  assert.deepEqual((await fetchLink(app, m.attachments[0]!.url!)).rawPayload, doc);
  const gets = meta.requests.filter((r) => r.method === 'GET');
  assert.ok(gets.length >= 2 && gets.every((r) => r.headers.authorization === `Bearer ${meta.accessToken}`));
});

test('e-mail parts are stored after commit; the web widget hands over uploads', async (t) => {
  const app = await buildTestApp(t, { ...INBOUND_ENV, ...tempStore(t).env });
  const admin = await createStaff(app, 'admin');
  const doc = pdf();
  const raw = [
    'From: Ana <ana.files@guest.test>',
    'To: desk@hotel.example.test',
    'Subject: My booking',
    'Message-ID: <files-1@guest.test>',
    'MIME-Version: 1.0',
    'Content-Type: multipart/mixed; boundary="b1"',
    '',
    '--b1',
    'Content-Type: text/plain; charset=utf-8',
    '',
    'Attached is the confirmation.',
    '--b1',
    'Content-Type: application/pdf; name="confirmation.pdf"',
    'Content-Disposition: attachment; filename="confirmation.pdf"',
    'Content-Transfer-Encoding: base64',
    '',
    doc.toString('base64'),
    '--b1--',
    '',
  ].join('\r\n');
  assert.equal((await postEmail(app, raw, EMAIL_SECRET)).status, 201);
  const m = await settled(app, admin, 'ana.files@guest.test');
  assert.deepEqual(
    m.attachments.map((a) => [a.status, a.contentType]),
    [['stored', 'application/pdf']],
  );
  assert.deepEqual((await fetchLink(app, m.attachments[0]!.url!)).rawPayload, doc);
  // Fetching a settled file again (a job run twice) changes nothing and writes no event.
  const events = (await updatesOf(app, admin, m.id)).length;
  assert.equal(await app.inboundFiles.storeInboundAttachment(m.attachments[0]!.id), 'stored');
  assert.equal((await updatesOf(app, admin, m.id)).length, events);

  const file = (await upload(app, admin.token, png(), 'selfie.png')).data;
  const web = await call(app, 'POST', '/channels/web/inbound', {
    token: admin.token,
    body: { guest: { visitorId: 'visitor-42' }, attachments: [file.id] },
  });
  assert.equal(web.status, 201, web.raw.body);
  const again = await call(app, 'POST', '/channels/web/inbound', {
    token: admin.token,
    body: { guest: { visitorId: 'visitor-42' }, content: 'again', attachments: [file.id] },
  });
  assert.equal(again.status, 400, 'an upload a message took is not taken twice');
  assert.equal(again.body.error.details[0].field, 'attachments/0');
  const got = await call(app, 'GET', `/attachments/${file.id}`, { token: admin.token });
  assert.equal(got.data.messageId, web.data.message.id);
});
