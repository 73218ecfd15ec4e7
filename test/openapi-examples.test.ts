// Every example in the served document is one the server accepts and would answer.
// Each example satisfies the schema it illustrates; each request example, replayed in document
// order against one app with fixture ids and the credentials its operation names, gets a 2xx (or a
// 409 naming a record an earlier example made), every item of a bulk example succeeds; date-times
// in request examples lie ahead of the day the document is served.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import test from 'node:test';
import type { FastifyInstance } from 'fastify';
import { EXAMPLE_FUTURE, servedDocument } from '../src/lib/openapi-examples.js';
import { EXAMPLE_HOTEL_NUMBER, EXAMPLE_PHONE_NUMBER_ID } from '../src/modules/channels/schemas.js';
import { linkSecrets, tempStore, uploadText } from './attachments/files.js';
import { INBOUND_ENV, VERIFY_TOKEN } from './channels/signing.js';
import { type Doc, examplesOf, schemaChecker } from './document-examples.js';
import { type Replayed, replayDocument } from './example-replay.js';
import { buildTestApp, call, createStaff, settledMessage } from './helpers.js';

/**
 * Operations whose answer is opened and then closed by the client rather than read to its end,
 * because it has none: the live event stream.
 */
const STREAMS = new Set(['streamEvents']);

const served = async (app: FastifyInstance): Promise<Doc> => (await call(app, 'GET', '/api/v1/openapi.json')).body;

test('every example in the document satisfies the schema it illustrates', async (t) => {
  const app = await buildTestApp(t);
  const doc = await served(app);
  const examples = examplesOf(doc);
  assert.ok(examples.length > 200, `only ${examples.length} examples found`);
  const check = schemaChecker(doc);
  const wrong = examples.flatMap((e) => {
    const errors = check(e.schema, e.value);
    return errors.length === 0 ? [] : [`${e.where}: ${errors.slice(0, 3).join('; ')}`];
  });
  assert.deepEqual(wrong, []);
});

test('date-time values in request examples lie in the future when the document is served', async (t) => {
  const app = await buildTestApp(t);
  const found: string[] = [];
  const walk = (v: unknown, where: string) => {
    if (typeof v === 'string' && /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}/.test(v)) found.push(`${where}: ${v}`);
    else if (typeof v === 'object' && v !== null) for (const x of Object.values(v)) walk(x, where);
  };
  for (const e of examplesOf(await served(app))) if (e.request) walk(e.value, e.where);
  assert.ok(found.length >= 3, `request examples with a date-time: ${found.length}`);
  const now = Date.now();
  assert.deepEqual(
    found.filter((f) => !(Date.parse(f.slice(f.lastIndexOf(': ') + 2)) > now)),
    [],
  );
  // Served on a later day, the same document names dates a week after that day.
  const later = Date.parse('2031-05-01T18:00:00Z');
  const text = servedDocument(app.swagger(), later);
  assert.ok(text.includes('"2031-05-08T09:00:00.000Z"'));
  assert.ok(!text.includes(EXAMPLE_FUTURE));
});

/** A webhook receiver on this machine answering 200, so a fixture delivery settles at once. */
async function receiver(t: test.TestContext): Promise<string> {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.end('ok'));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise((resolve) => server.close(resolve)));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
}

/**
 * A record of each type the examples name, made through the API as an integrator's data would be:
 * a guest (with the PMS reference the stay examples name) and a stay, an e-mail conversation with a text that failed (no SMTP here), a task, a knowledge
 * entry, a webhook with a delivered test event, an API key; the caller stands for the staff id.
 */
async function fixtures(app: FastifyInstance, token: string, staffId: string, hook: string) {
  const post = async (url: string, body?: unknown) => {
    const res = await call(app, 'POST', url, { token, ...(body === undefined ? {} : { body }) });
    assert.ok(res.status === 201 || res.status === 202, `${url}: ${res.status} ${JSON.stringify(res.body)}`);
    return res.data as { id: string };
  };
  const guest = await post('/guests', {
    name: 'Rui Fixture',
    email: 'rui.fixture@example.net',
    phone: '+351910000001',
    externalRef: 'PROF-88231',
  });
  const stay = await post('/stays', { guestId: guest.id, checkIn: '2030-01-02', checkOut: '2030-01-04' });
  const conversation = await post('/conversations', { guestId: guest.id, channel: 'email', subject: 'Fixture' });
  const message = await post(`/conversations/${conversation.id}/messages`, { content: 'Undeliverable here' });
  await settledMessage(app, token, conversation.id, message.id, (m) => m.deliveryStatus === 'failed');
  const task = await post('/tasks', { title: 'Fixture task', department: 'maintenance', guestId: guest.id });
  const entry = await post('/knowledge', { title: 'Fixture entry', content: 'Breakfast is 7–10', category: 'dining' });
  const webhook = await post('/webhooks', { url: hook, events: ['task.created'] });
  const delivery = await post(`/webhooks/${webhook.id}/test`);
  for (let i = 0; ; i++) {
    const res = await call(app, 'GET', `/webhooks/${webhook.id}/deliveries`, { token });
    if (res.data.find((d: { id: string }) => d.id === delivery.id)?.status === 'succeeded') break;
    assert.ok(i < 500, 'the fixture delivery never succeeded');
    await new Promise((r) => setTimeout(r, 10));
  }
  const key = await post('/api-keys', { name: 'Fixture key', scopes: ['guests:read'] });
  const canned = await post('/canned-responses', { shortcode: 'fixture', title: 'Fixture', content: 'Hello!' });
  const file = await uploadText(app, token, 'Fixture file');
  return {
    stf: staffId,
    gst: guest.id,
    cnv: conversation.id,
    msg: message.id,
    tsk: task.id,
    kb: entry.id,
    whk: webhook.id,
    whd: delivery.id,
    key: key.id,
    cr: canned.id,
    att: file.id,
    sty: stay.id,
  };
}

/** The issue time of a JWT, in milliseconds. */
const issuedAt = (token: string) => JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()).iat * 1000;

test('every request example, replayed in document order with fixture ids, gets a 2xx', async (t) => {
  const hook = await receiver(t);
  const app = await buildTestApp(t, {
    ...INBOUND_ENV,
    ...tempStore(t).env,
    // The hotel's numbers the provider examples write to, so they are stored rather than ignored.
    TWILIO_SMS_FROM: EXAMPLE_HOTEL_NUMBER,
    WHATSAPP_PHONE_NUMBER_ID: EXAMPLE_PHONE_NUMBER_ID,
    // Nothing leaves this machine: providers at a closed port, webhooks to any host by form only.
    TWILIO_API_URL: 'http://127.0.0.1:9',
    WHATSAPP_API_URL: 'http://127.0.0.1:9',
    WEBHOOK_ALLOW_PRIVATE: 'true',
    CHANNEL_POLL_INTERVAL_MS: '20',
    RATE_LIMIT_STANDARD: '100000',
    RATE_LIMIT_BULK: '100000',
  });
  const doc = await served(app);
  // The account the login example signs in with calls every operation.
  const signIn = doc.paths['/api/v1/auth/login'].post.requestBody.content['application/json'].example;
  const caller = await createStaff(app, 'admin', { name: 'Ana Lopes', ...signIn });
  // A fresh token per request, never older than the newest session an answer handed out (a
  // password change refuses tokens issued before it; a logout revokes the one it was sent with).
  let notBefore = 0;
  const token = () => app.ctx.tokens.sign(caller.id, 'admin', Math.max(Date.now(), notBefore)).token;
  const ids = await fixtures(app, caller.token, caller.id, hook);
  const made = new Set<string>();
  const failures: string[] = [];
  const replayed: string[] = [];
  const onAnswer = (r: Replayed) => {
    replayed.push(r.operationId);
    const data = r.body?.data;
    if (typeof data?.token === 'string') notBefore = Math.max(notBefore, issuedAt(data.token));
    const said = `${r.name} → ${r.status} ${typeof r.body === 'string' ? r.body : JSON.stringify(r.body)}`.slice(
      0,
      600,
    );
    if (r.problems.length > 0) failures.push(`${said}: the answer breaks the document: ${r.problems.join('; ')}`);
    if (r.status === 409) {
      const details = r.body?.error?.details;
      const named = (Array.isArray(details) ? details : []) as { existingId?: string }[];
      if (!named.some((d) => d.existingId !== undefined && made.has(d.existingId))) failures.push(said);
      return;
    }
    if (r.status < 200 || r.status > 299) return void failures.push(said);
    if (r.status === 201 && typeof data?.id === 'string') made.add(data.id);
    if (r.operationId.startsWith('bulk')) {
      for (const item of data as { success: boolean; data?: { id?: string } }[]) {
        if (!item.success) failures.push(`${said} (item)`);
        if (typeof item.data?.id === 'string') made.add(item.data.id);
      }
    }
  };
  await replayDocument(app, doc, {
    fixtures: ids,
    token,
    secrets: { 'hub.verify_token': VERIFY_TOKEN, ...linkSecrets(app.attachments.signer.url(ids.att)) },
    streams: STREAMS,
    check: schemaChecker(doc),
    onAnswer,
  });
  assert.deepEqual(failures, []);
  // The guests' messages the provider examples carry landed, each in a conversation of its channel.
  for (const channel of ['sms', 'whatsapp', 'email', 'web']) {
    const res = await call(app, 'GET', `/conversations?channel=${channel}`, { token: token() });
    assert.ok(res.data.length > 0, `no ${channel} conversation after the replay`);
  }
  // The replay reached every operation of the document.
  const operations = Object.values(doc.paths as Record<string, Record<string, { operationId: string }>>).flatMap(
    (item) => Object.values(item).map((op) => op.operationId),
  );
  assert.deepEqual([...new Set(replayed)].sort(), operations.sort());
});
