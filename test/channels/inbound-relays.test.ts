// Inbound e-mail the way relays post it (docs/channels.md): SendGrid's raw form (`email`), Mailgun's
// MIME form (`body-mime`) and Postmark's JSON (`RawEmail`, or its parsed fields), on the route and
// Basic auth of raw mail, with raw mail's guarantees: one message per Message-ID (whichever way it
// came), the thread rule, the text, and no auto reply to automated mail.
import assert from 'node:assert/strict';
import test from 'node:test';
import type { FastifyInstance } from 'fastify';
import { assertError } from '../fixtures.js';
import { buildTestApp, call, createStaff, type TestUser } from '../helpers.js';
import { mailgunFields, multipart, postmarkJson, postRelay, sendgridRaw } from './relays.js';
import { email, INBOUND_ENV, postEmail } from './signing.js';

async function setup(t: test.TestContext) {
  const app = await buildTestApp(t, { ...INBOUND_ENV, CHANNELS_DRY_RUN: 'true' });
  const admin = await createStaff(app, 'admin');
  return { app, admin };
}

async function contents(app: FastifyInstance, admin: TestUser, conversationId: string) {
  const res = await call(app, 'GET', `/conversations/${conversationId}/messages?limit=100`, { token: admin.token });
  assert.equal(res.status, 200);
  return (res.data as { content: string }[]).map((m) => m.content);
}

const urlencoded = (fields: [string, string][]) => new URLSearchParams(fields).toString();
const FORM = 'application/x-www-form-urlencoded';

test("SendGrid's raw form (the message in `email`) is read like raw mail, and stored once", async (t) => {
  const { app, admin } = await setup(t);
  const raw = email({
    from: 'Ana Lopes <ana@example.test>',
    subject: 'Late check-out',
    messageId: '<sg-1@mail.example.test>',
    text: 'Could we leave at 14:00? Ça serait parfait.',
  });
  const form = sendgridRaw(raw, 'ana@example.test');
  const res = await postRelay(app, form.body, form.type);
  assert.equal(res.status, 201, JSON.stringify(res.body));
  assert.equal(res.data.message.content, 'Could we leave at 14:00? Ça serait parfait.');
  assert.equal(res.data.message.externalId, '<sg-1@mail.example.test>');
  assert.equal(res.data.guestCreated, true);
  assert.match(String(res.headers.location), /^\/api\/v1\/conversations\/cnv_\w+\/messages\/msg_\w+$/);
  const conversation = await call(app, 'GET', `/conversations/${res.data.conversationId}`, { token: admin.token });
  assert.equal(conversation.data.subject, 'Late check-out');
  const guest = await call(app, 'GET', `/guests/${res.data.guestId}`, { token: admin.token });
  assert.equal(guest.data.name, 'Ana Lopes');
  assert.equal(guest.data.email, 'ana@example.test');

  // SendGrid retrying, or the same mail arriving raw: the stored message's id only.
  const again = await postRelay(app, form.body, form.type);
  assert.deepEqual(again.body, { success: true, data: { duplicate: true, message: { id: res.data.message.id } } });
  const direct = await postEmail(app, raw);
  assert.equal(direct.status, 200, JSON.stringify(direct.body));
  assert.equal(direct.data.message.id, res.data.message.id);
  // The message sent as a file part, as some HTTP libraries do: the same bytes, the same mail.
  const asFile = multipart([['email', raw, { filename: 'message.eml', type: 'message/rfc822' }]]);
  const file = await postRelay(app, asFile.body, asFile.type);
  assert.equal(file.status, 200, JSON.stringify(file.body));
  // An 8-bit Latin-1 body arrives byte for byte.
  const latin1 = Buffer.from(
    email({
      from: 'joao@example.test',
      messageId: '<sg-2@mail.example.test>',
      contentType: 'text/plain; charset=iso-8859-1',
      text: 'Até amanhã',
    }),
    'latin1',
  );
  const eight = sendgridRaw(latin1, 'joao@example.test');
  const read = await postRelay(app, eight.body, eight.type);
  assert.equal(read.status, 201, JSON.stringify(read.body));
  assert.equal(read.data.message.content, 'Até amanhã');
});

test("Mailgun's MIME form (`body-mime`) is read at the route and at its /mime address, multipart or encoded", async (t) => {
  const { app, admin } = await setup(t);
  const raw = (n: number, text: string) =>
    email({ from: 'Bea <bea@example.test>', subject: 'Spa', messageId: `<mg-${n}@mail.example.test>`, text });
  const asForm = multipart(mailgunFields(raw(1, 'Is the spa open?')));
  // Mailgun takes only 200 as success (any other code is retried for 8 hours): /mime answers 200.
  const first = await postRelay(app, asForm.body, asForm.type, { path: '/mime' });
  assert.equal(first.status, 200, JSON.stringify(first.body));
  assert.equal(first.data.duplicate, false);
  assert.equal(first.data.message.content, 'Is the spa open?');
  assert.equal(first.data.message.externalId, '<mg-1@mail.example.test>');
  assert.equal((await postRelay(app, asForm.body, asForm.type, { path: '/mime' })).status, 200);

  const encoded = await postRelay(app, urlencoded(mailgunFields(raw(2, 'Until when?'))), FORM, { path: '/mime' });
  assert.equal(encoded.status, 200, JSON.stringify(encoded.body));
  const plain = multipart(mailgunFields(raw(3, 'Thanks!')));
  const atRoute = await postRelay(app, plain.body, plain.type);
  assert.equal(atRoute.status, 201, JSON.stringify(atRoute.body));
  assert.equal(atRoute.data.conversationId, first.data.conversationId);
  assert.deepEqual(await contents(app, admin, first.data.conversationId), [
    'Is the spa open?',
    'Until when?',
    'Thanks!',
  ]);
  // The raw route's rules hold at /mime too: the password, and the accepted forms.
  assertError(await postRelay(app, plain.body, plain.type, { path: '/mime', password: 'wrong' }), 403, 'FORBIDDEN');
});

test("Postmark's JSON with RawEmail is read like raw mail", async (t) => {
  const { app } = await setup(t);
  const raw = email({ from: 'carla@example.test', messageId: '<pm-raw@mail.example.test>', text: 'Raw via Postmark' });
  const body = postmarkJson({ from: 'carla@example.test', text: 'Postmark parsed this', raw });
  const res = await postRelay(app, JSON.stringify(body), 'application/json');
  assert.equal(res.status, 201, JSON.stringify(res.body));
  assert.equal(res.data.message.content, 'Raw via Postmark', 'the raw message wins over the parsed fields');
  assert.equal(res.data.message.externalId, '<pm-raw@mail.example.test>');
  assert.equal((await postEmail(app, raw)).status, 200, 'the same mail posted raw is a repeat');
});

test("Postmark's parsed JSON: sender, text, Message-ID, thread and auto-reply rules from its fields", async (t) => {
  const { app, admin } = await setup(t);
  const first = await postRelay(
    app,
    JSON.stringify(
      postmarkJson({
        from: 'dora@example.test',
        name: 'Dora Smith',
        subject: 'Airport transfer',
        text: 'Can you book a taxi?\n',
        html: '<p>Can you book a taxi?</p>',
        headers: [['Message-ID', '<pm-1@mail.example.test>']],
        attachments: 2,
      }),
    ),
    'application/json',
  );
  assert.equal(first.status, 201, JSON.stringify(first.body));
  assert.equal(first.data.message.content, 'Can you book a taxi?\n[2 attachments]');
  assert.equal(first.data.message.externalId, '<pm-1@mail.example.test>');
  const dora = await call(app, 'GET', `/guests/${first.data.guestId}`, { token: admin.token });
  assert.equal(dora.data.name, 'Dora Smith');
  const thread = first.data.conversationId as string;
  const subject = await call(app, 'GET', `/conversations/${thread}`, { token: admin.token });
  assert.equal(subject.data.subject, 'Airport transfer');

  // The same mail arriving raw afterwards is a repeat: one Message-ID, one message.
  const raw = email({ from: 'dora@example.test', messageId: '<pm-1@mail.example.test>', text: 'Can you book a taxi?' });
  assert.equal((await postEmail(app, raw)).status, 200);

  // A newer conversation exists; a reply naming the first mail joins the first one (In-Reply-To,
  // or References alone), as raw mail would; Mallory naming it does not.
  const newer = await call(app, 'POST', '/conversations', {
    token: admin.token,
    body: { guestId: first.data.guestId, channel: 'email', subject: 'Invoice' },
  });
  assert.equal(newer.status, 201, JSON.stringify(newer.body));
  const reply = (from: string, id: string, headers: [string, string][], text: string) =>
    postRelay(
      app,
      JSON.stringify(postmarkJson({ from, text, headers: [['Message-ID', id], ...headers], postmarkId: id })),
      'application/json',
    );
  const fresh = await reply('dora@example.test', '<pm-4@x>', [], 'About the invoice');
  assert.equal(fresh.data.conversationId, newer.data.id, 'naming no thread: the latest conversation');
  const inReply = await reply('Dora@Example.test', '<pm-2@x>', [['In-Reply-To', '<pm-1@mail.example.test>']], 'At 9?');
  assert.equal(inReply.status, 201, JSON.stringify(inReply.body));
  assert.equal(inReply.data.conversationId, thread);
  const byRefs = await reply('dora@example.test', '<pm-3@x>', [['References', '<a@x> <pm-1@mail.example.test>']], 'Ok');
  assert.equal(byRefs.data.conversationId, thread);
  const mallory = await reply('mallory@example.test', '<pm-5@x>', [['In-Reply-To', '<pm-1@mail.example.test>']], '?');
  assert.notEqual(mallory.data.conversationId, thread);
  assert.deepEqual(await contents(app, admin, thread), ['Can you book a taxi?\n[2 attachments]', 'At 9?', 'Ok']);

  // HTML only: its text. No Message-ID header: Postmark's own MessageID keeps its retries to one.
  const htmlOnly = postmarkJson({
    from: 'eva@example.test',
    html: '<html><body><p>Is&nbsp;the <b>pool</b> heated?</p></body></html>',
    postmarkId: 'b7bc2f4a-e38e-4336-af7d-e6c392c2f817',
  });
  const html = await postRelay(app, JSON.stringify(htmlOnly), 'application/json');
  assert.equal(html.status, 201, JSON.stringify(html.body));
  assert.equal(html.data.message.content, 'Is the pool heated?');
  assert.equal(html.data.message.externalId, null);
  const retried = await postRelay(app, JSON.stringify(htmlOnly), 'application/json');
  assert.deepEqual(retried.data, { duplicate: true, message: { id: html.data.message.id } });
});

test("Postmark's parsed mail from a machine gets no auto reply; a person's does", async (t) => {
  const { app, admin } = await setup(t);
  const put = (key: string, value: unknown) =>
    call(app, 'PUT', `/settings/${key}`, { token: admin.token, body: { value } });
  assert.equal((await put('auto_reply', { enabled: true, message: 'We are closed.' })).status, 200);
  const closed = { timezone: 'Europe/Lisbon', days: { mon: [], tue: [], wed: [], thu: [], fri: [], sat: [], sun: [] } };
  assert.equal((await put('business_hours', closed)).status, 200);
  let n = 0;
  const post = (from: string, headers: [string, string][]) =>
    postRelay(
      app,
      JSON.stringify(postmarkJson({ from, text: 'x', headers: [['Message-ID', `<auto-${++n}@x>`], ...headers] })),
      'application/json',
    );
  for (const [what, from, headers] of [
    ['Auto-Submitted', 'a1@example.test', [['Auto-Submitted', 'auto-replied']]],
    ['Precedence', 'a2@example.test', [['Precedence', 'bulk']]],
    ['List-Id', 'a3@example.test', [['List-Id', 'News <news.example.test>']]],
    ['null Return-Path', 'a4@example.test', [['Return-Path', '<>']]],
    ['MAILER-DAEMON', 'MAILER-DAEMON@mx.example.test', []],
  ] as [string, string, [string, string][]][]) {
    const res = await post(from, headers);
    assert.equal(res.status, 201, `${what}: ${JSON.stringify(res.body)}`);
    assert.equal(res.data.autoReply, null, what);
  }
  const person = await post('person@example.test', [['Auto-Submitted', 'no']]);
  assert.equal(person.data.autoReply?.content, 'We are closed.');
});

test('a body in none of the relay forms is 415 naming them; a broken one is 400; never a 500', async (t) => {
  const { app } = await setup(t);
  const parsedMode = multipart([
    ['from', 'ana@example.test'],
    ['text', 'SendGrid parsed this'],
    ['subject', 'Hi'],
  ]);
  for (const [what, body, type] of [
    ['JSON of another shape', '{"from":"a@example.test","text":"hi"}', 'application/json'],
    ['a JSON array', '[1,2]', 'application/json'],
    ["SendGrid's parsed mode", parsedMode.body, parsedMode.type],
    [
      "Mailgun's parsed mode",
      urlencoded([
        ['sender', 'a@example.test'],
        ['body-plain', 'hi'],
      ]),
      FORM,
    ],
    ['plain text', 'From: a@example.test\r\n\r\nhi', 'text/plain'],
  ] as [string, string | Buffer, string][]) {
    const res = await postRelay(app, body, type);
    assertError(res, 415, 'UNSUPPORTED_MEDIA_TYPE', what);
    for (const named of ['message/rfc822', 'email', 'body-mime', 'RawEmail']) {
      assert.ok(res.body.error.message.includes(named), `${what}: names ${named}: ${res.body.error.message}`);
    }
  }
  const noSender = sendgridRaw('Subject: nobody\r\n\r\nbody\r\n');
  const proto = multipart(
    [
      ['__proto__', 'x'],
      ['email', 'From: a@example.test\r\n\r\nx'],
    ],
    'b',
  );
  for (const [what, body, type, field] of [
    [
      'Postmark without an address',
      JSON.stringify(postmarkJson({ from: 'not an address', text: 'x' })),
      'application/json',
      'sender',
    ],
    [
      'Postmark with a wrong type',
      JSON.stringify({ From: 'a@example.test', Headers: 'x' }),
      'application/json',
      'Headers',
    ],
    [
      'a form without its end',
      Buffer.from('--b\r\nContent-Disposition: form-data; name="email"\r\n\r\nFrom:'),
      'multipart/form-data; boundary=b',
      'body',
    ],
    ['a form without a boundary', Buffer.from('email=x'), 'multipart/form-data', 'body'],
    ['a form naming __proto__', proto.body, proto.type, 'body'],
    ['a message without a sender', noSender.body, noSender.type, 'body'],
  ] as [string, string | Buffer, string, string][]) {
    const res = await postRelay(app, body, type);
    assertError(res, 400, 'VALIDATION_ERROR', what);
    assert.equal(res.body.error.details[0].field, field, `${what}: ${JSON.stringify(res.body)}`);
  }
});

test("the document's examples of the e-mail route, in each form, are e-mails the server stores", async (t) => {
  const { app } = await setup(t);
  const doc = (await call(app, 'GET', '/api/v1/openapi.json')).body;
  for (const path of ['/api/v1/channels/email/inbound', '/api/v1/channels/email/inbound/mime']) {
    const content = doc.paths[path].post.requestBody.content as Record<string, { example: unknown }>;
    assert.deepEqual(Object.keys(content).sort(), [
      'application/json',
      'application/x-www-form-urlencoded',
      'message/rfc822',
      'multipart/form-data',
    ]);
    for (const [type, { example }] of Object.entries(content)) {
      const fields = Object.entries(example as Record<string, string>);
      const [body, sent] =
        type === 'message/rfc822'
          ? [example as string, type]
          : type === 'application/json'
            ? [JSON.stringify(example), type]
            : type === FORM
              ? [urlencoded(fields), type]
              : (({ body, type }) => [body, type])(multipart(fields));
      const res = await postRelay(app, body, sent, { path: path.endsWith('/mime') ? '/mime' : '' });
      // Each form's example is its own e-mail; the /mime address shows the same ones again.
      assert.equal(res.status, path.endsWith('/mime') ? 200 : 201, `${path} ${type}: ${JSON.stringify(res.body)}`);
    }
  }
});
