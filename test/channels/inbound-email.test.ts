// The inbound e-mail route as a relay and an attacker meet it: the password checked before the
// body is read, a 10 MiB cap on every form a relay posts, bounded HTML-to-text work, a clean 415
// for a body in none of the accepted forms, de-duplication without a Message-ID, and no auto
// reply to automated mail (RFC 3834).
import assert from 'node:assert/strict';
import { type AddressInfo, connect } from 'node:net';
import { Readable } from 'node:stream';
import test from 'node:test';
import { htmlText } from '../../src/modules/channels/html-text.js';
import { assertError } from '../fixtures.js';
import { buildTestApp, call, createStaff } from '../helpers.js';
import { FAST_CHANNELS, fakeSmtp, smtpEnv, until } from './fakes.js';
import { basic, multipart, postmarkJson, postRelay, EMAIL_ROUTE as ROUTE, sendgridRaw } from './relays.js';
import { EMAIL_SECRET, email, INBOUND_ENV, postEmail } from './signing.js';

const MIB = 1024 * 1024;
const FORM = 'application/x-www-form-urlencoded';

async function setup(t: test.TestContext) {
  const app = await buildTestApp(t, { ...INBOUND_ENV, CHANNELS_DRY_RUN: 'true' });
  const admin = await createStaff(app, 'admin');
  return { app, admin };
}

/**
 * Sends a request's headers and the first bytes of a body announced as `length` bytes, then waits
 * for the answer: the server must answer without the rest. Resolves the status line and the body,
 * or null when no answer came (the server is waiting for the body it was promised).
 */
async function headersOnly(port: number, headers: Record<string, string>, length: number, path = '') {
  const socket = connect(port, '127.0.0.1');
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  const lines = Object.entries({ host: '127.0.0.1', 'content-length': String(length), ...headers })
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('');
  socket.write(`POST ${ROUTE}${path} HTTP/1.1\r\n${lines}\r\nFrom: someone@example.test\r\n`);
  let got = '';
  socket.on('data', (d) => {
    got += d.toString('latin1');
  });
  // Generous: today's server never answers here, and a loaded CI machine must not fail a good one.
  const answered = await new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => resolve(false), 5000);
    const done = () => {
      clearTimeout(timer);
      resolve(true);
    };
    socket.on('close', done);
    socket.on('data', () => {
      if (/\r\n\r\n[\s\S]*\}$/.test(got)) done();
    });
  });
  socket.destroy();
  if (!answered) return null;
  const [head, body] = got.split('\r\n\r\n', 2) as [string, string];
  return { status: Number(head.split(' ')[1]), head: head.toLowerCase(), body: JSON.parse(body) };
}

test('a wrong or missing e-mail password is refused before the body is read, in every relay form', async (t) => {
  const { app } = await setup(t);
  await app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = app.server.address() as AddressInfo;
  for (const type of ['message/rfc822', 'multipart/form-data; boundary=xYzZY', 'application/json', FORM]) {
    for (const auth of [{ authorization: basic('wrong') }, {}] as Record<string, string>[]) {
      for (const path of ['', '/mime']) {
        const res = await headersOnly(port, { 'content-type': type, ...auth }, 5 * MIB, path);
        assert.ok(res, `${type}: answered without the body`);
        assert.equal(res.status, 403, type);
        assert.equal(res.body.error.code, 'FORBIDDEN');
        assert.match(res.head, /connection: close/, 'the connection ends: the rest of the body is never read');
      }
    }
  }
});

test('a relay form over 10 MiB is refused as too large, announced or streamed, however it is split', async (t) => {
  const { app } = await setup(t);
  const auth = { authorization: basic(EMAIL_SECRET) };
  const streamed = (body: Buffer, type: string) =>
    app.inject({
      method: 'POST',
      url: ROUTE,
      headers: { 'content-type': type, ...auth },
      payload: Readable.from([body]),
    });
  const big = email({ from: 'big@example.test', messageId: '<big-form@x>', text: 'x'.repeat(10 * MIB) });
  const sendgrid = sendgridRaw(big);
  const announced = await postRelay(app, sendgrid.body, sendgrid.type);
  assertError(announced, 413, 'PAYLOAD_TOO_LARGE');
  assert.match(announced.body.error.message, /10 MiB/);
  for (const [what, form] of [
    ['one message part', sendgrid],
    // Eleven fields of 1 MiB, each within a field's bound: the parts together pass the cap.
    ['many parts', multipart(Array.from({ length: 11 }, (_, i) => [`f${i}`, 'y'.repeat(MIB - 100)]))],
  ] as const) {
    const res = await streamed(form.body, form.type);
    assert.equal(res.statusCode, 413, `${what}: ${res.body}`);
    assert.equal(res.json().error.code, 'PAYLOAD_TOO_LARGE', what);
  }
  const manyParts = multipart(Array.from({ length: 200 }, (_, i) => [`f${i}`, 'z']));
  const parts = await streamed(manyParts.body, manyParts.type);
  assert.equal(parts.statusCode, 413, parts.body);
  const json = JSON.stringify(postmarkJson({ from: 'big@example.test', raw: big }));
  assertError(await postRelay(app, json, 'application/json'), 413, 'PAYLOAD_TOO_LARGE');
  assert.equal((await streamed(Buffer.from(json), 'application/json')).statusCode, 413);
  const encoded = `body-mime=${encodeURIComponent(big)}`;
  assert.equal((await streamed(Buffer.from(encoded), FORM)).statusCode, 413);

  // Just within the cap, in each form: taken.
  const fits = email({ from: 'fits@example.test', messageId: '<fits@x>', text: 'x'.repeat(9 * MIB) });
  const within = sendgridRaw(fits);
  const taken = await streamed(within.body, within.type);
  assert.equal(taken.statusCode, 201, taken.body);
});

test('an e-mail over 10 MiB is refused as too large, before it is read when its length is announced', async (t) => {
  const { app } = await setup(t);
  const big = email({ from: 'big@example.test', messageId: '<big@x>', text: 'x'.repeat(10 * MIB) });
  const res = await postEmail(app, big);
  assertError(res, 413, 'PAYLOAD_TOO_LARGE');
  assert.match(res.body.error.message, /10 MiB/);

  // Streamed without a length: refused at the cap, with the same clear message.
  const streamed = await app.inject({
    method: 'POST',
    url: ROUTE,
    headers: { 'content-type': 'message/rfc822', authorization: basic(EMAIL_SECRET) },
    payload: Readable.from([Buffer.from(big)]),
  });
  assert.equal(streamed.statusCode, 413);
  assert.match(streamed.json().error.message, /10 MiB/);

  await app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = app.server.address() as AddressInfo;
  const early = await headersOnly(
    port,
    { 'content-type': 'message/rfc822', authorization: basic(EMAIL_SECRET) },
    10 * MIB + 1,
  );
  assert.ok(early, 'answered without the body');
  assert.equal(early.status, 413);
  assert.equal(early.body.error.code, 'PAYLOAD_TOO_LARGE');
});

test('a body in none of the accepted forms is 415 naming them, after the password', async (t) => {
  const { app } = await setup(t);
  for (const [type, body] of [
    ['application/json', '{"from":"a@example.test","text":"hi"}'],
    ['text/plain', 'From: a@example.test\r\n\r\nhi'],
    ['application/x-www-form-urlencoded', 'from=a%40example.test'],
    ['application/octet-stream', 'From: a@example.test\r\n\r\nhi'],
  ] as const) {
    const res = await call(app, 'POST', ROUTE, {
      body,
      headers: { 'content-type': type, authorization: basic(EMAIL_SECRET) },
    });
    assertError(res, 415, 'UNSUPPORTED_MEDIA_TYPE', type);
    assert.match(res.body.error.message, /message\/rfc822.*`email`.*`body-mime`.*`RawEmail`/);
    const stranger = await call(app, 'POST', ROUTE, {
      body,
      headers: { 'content-type': type, authorization: basic('wrong') },
    });
    assertError(stranger, 403, 'FORBIDDEN', type);
  }
});

test('an HTML-only e-mail is read as text from its first 1 MiB of HTML', async (t) => {
  const { app } = await setup(t);
  const html = (body: string, id: string) =>
    email({ from: `${id}@example.test`, messageId: `<${id}@x>`, contentType: 'text/html; charset=utf-8', text: body });
  const plain = await postEmail(
    app,
    html(
      '<html><head><style>p { color: red }</style></head><body><p>Is&nbsp;the <b>spa</b> open?</p></body></html>',
      'a',
    ),
  );
  assert.equal(plain.status, 201, JSON.stringify(plain.body));
  assert.equal(plain.data.message.content, 'Is the spa open?');
  // Text past the first 1 MiB of markup is not looked for.
  const late = await postEmail(app, html(`${'<br>'.repeat(MIB / 4 + 1)}<p>hidden tail</p>`, 'b'));
  assert.equal(late.status, 201, JSON.stringify(late.body));
  assert.equal(late.data.message.content, '[empty e-mail]');
  // 9 MiB of '<' (the quadratic case of a tag-stripping regex) is text like any other.
  const lt = await postEmail(app, html('<'.repeat(9 * MIB), 'c'));
  assert.equal(lt.status, 201, JSON.stringify(lt.body));
  assert.equal(lt.data.message.content.length, 4096);
});

test('HTML becomes text in one pass: tags, comments, style and script dropped, entities decoded', () => {
  assert.equal(
    htmlText('<p>Caf&eacute; &amp; bar&#33; &#x263A;</p><p>Line 2<br>Line 3</p>'),
    'Café & bar! ☺\n\nLine 2\nLine 3',
  );
  assert.equal(htmlText('a <!-- <p>hidden</p> --> b <script>alert(1)</script><STYLE>x</STYLE> c'), 'a b c');
  assert.equal(htmlText('unclosed <b tag and text'), 'unclosed <b tag and text');
  assert.equal(htmlText('x<script>never closed'), 'x');
  assert.equal(htmlText('&lt;tag&gt; &unknown; &#99999999;'), '<tag> &unknown; &#99999999;');
  assert.equal(htmlText('<'.repeat(100)), '<'.repeat(100));
});

test('an e-mail without a Message-ID is stored once however often a relay repeats it', async (t) => {
  const { app } = await setup(t);
  const raw = email({ from: 'nomid@example.test', subject: 'Late arrival', text: 'We arrive at 23:00.' });
  const first = await postEmail(app, raw);
  assert.equal(first.status, 201, JSON.stringify(first.body));
  assert.equal(first.data.message.externalId, null, 'it has no provider id of its own');
  const again = await postEmail(app, raw);
  assert.equal(again.status, 200);
  assert.deepEqual(again.data, { duplicate: true, message: { id: first.data.message.id } });
  // Relayed again through another hop: a new trace header, the same message.
  const relayed = await postEmail(
    app,
    `Received: from mx2.example.test by relay.hotel.example.test; Wed, 25 Nov 2026 09:05:00 +0000\r\n${raw}`,
  );
  assert.equal(relayed.status, 200, JSON.stringify(relayed.body));
  assert.equal(relayed.data.message.id, first.data.message.id);
  const other = await postEmail(
    app,
    email({ from: 'nomid@example.test', subject: 'Late arrival', text: 'We arrive at 22:00.' }),
  );
  assert.equal(other.status, 201, 'another text is another message');
});

test('the auto reply never answers automated mail: Auto-Submitted, bulk or list mail, bounces', async (t) => {
  const { app, admin } = await setup(t);
  const put = (key: string, value: unknown) =>
    call(app, 'PUT', `/settings/${key}`, { token: admin.token, body: { value } });
  assert.equal((await put('auto_reply', { enabled: true, message: 'We are closed.' })).status, 200);
  const closed = { timezone: 'Europe/Lisbon', days: { mon: [], tue: [], wed: [], thu: [], fri: [], sat: [], sun: [] } };
  assert.equal((await put('business_hours', closed)).status, 200);

  const report = 'multipart/report; report-type=delivery-status; boundary="b"';
  const automated: [string, Parameters<typeof email>[0]][] = [
    ['auto-replied', { from: 'a1@example.test', headers: ['Auto-Submitted: auto-replied (vacation)'], text: 'x' }],
    ['auto-generated', { from: 'a2@example.test', headers: ['Auto-Submitted: auto-generated'], text: 'x' }],
    ['bulk', { from: 'a3@example.test', headers: ['Precedence: bulk'], text: 'x' }],
    ['list', { from: 'a4@example.test', headers: ['Precedence: List'], text: 'x' }],
    ['junk', { from: 'a5@example.test', headers: ['Precedence: junk'], text: 'x' }],
    ['List-Id', { from: 'a6@example.test', headers: ['List-Id: News <news.example.test>'], text: 'x' }],
    ['List-Unsubscribe', { from: 'a7@example.test', headers: ['List-Unsubscribe: <mailto:u@x.test>'], text: 'x' }],
    ['null Return-Path', { from: 'a8@example.test', headers: ['Return-Path: <>'], text: 'x' }],
    ['MAILER-DAEMON', { from: 'Mail Delivery System <MAILER-DAEMON@mx.example.test>', text: 'x' }],
    ['postmaster', { from: 'postmaster@mx.example.test', text: 'x' }],
    [
      'multipart/report',
      {
        from: 'a9@example.test',
        contentType: report,
        text: '--b\r\nContent-Type: text/plain\r\n\r\nDelivery failed\r\n--b--',
      },
    ],
  ];
  let n = 0;
  for (const [what, mail] of automated) {
    const res = await postEmail(app, email({ ...mail, messageId: `<auto-${n++}@x>` }));
    assert.equal(res.status, 201, `${what}: stored ${JSON.stringify(res.body)}`);
    assert.equal(res.data.autoReply, null, `${what}: no auto reply`);
  }
  for (const [what, headers] of [
    ['a person', []],
    ['Auto-Submitted: no', ['Auto-Submitted: no']],
    ['a Return-Path', ['Return-Path: <guest@example.test>']],
  ] as const) {
    const res = await postEmail(
      app,
      email({ from: `person${n}@example.test`, headers: [...headers], messageId: `<auto-${n++}@x>`, text: 'x' }),
    );
    assert.equal(res.status, 201);
    assert.equal(res.data.autoReply?.content, 'We are closed.', `${what}: answered`);
  }
});

test('our own auto reply says Auto-Submitted: auto-replied (RFC 3834); a person’s reply does not', async (t) => {
  const smtp = await fakeSmtp(t);
  const app = await buildTestApp(t, { ...INBOUND_ENV, ...FAST_CHANNELS, ...smtpEnv(smtp) });
  const admin = await createStaff(app, 'admin');
  const put = (key: string, value: unknown) =>
    call(app, 'PUT', `/settings/${key}`, { token: admin.token, body: { value } });
  assert.equal((await put('auto_reply', { enabled: true, message: 'We are closed.' })).status, 200);
  const closed = { timezone: 'Europe/Lisbon', days: { mon: [], tue: [], wed: [], thu: [], fri: [], sat: [], sun: [] } };
  assert.equal((await put('business_hours', closed)).status, 200);
  const res = await postEmail(app, email({ from: 'guest@example.test', messageId: '<rfc3834@x>', text: 'Hello?' }));
  assert.equal(res.data.autoReply?.content, 'We are closed.');
  await until('the auto reply is sent', () => smtp.received.length === 1);
  assert.match(smtp.received[0]!.raw, /^Auto-Submitted: auto-replied\r?$/im);
  const reply = await call(app, 'POST', `/conversations/${res.data.conversationId}/messages`, {
    token: admin.token,
    body: { content: 'We open at 8.' },
  });
  assert.equal(reply.status, 201);
  await until('the staff reply is sent', () => smtp.received.length === 2);
  assert.doesNotMatch(smtp.received[1]!.raw, /^Auto-Submitted:/im);
});
