// Anonymous web visitors (docs/channels.md, Web chat): a widget names a visitor by its own id, with no e-mail or
// phone, and the same id is the same guest, for its caller only; the document states the rules of
// the body (exactly one of guestId and guest; a guest known by e-mail, phone or visitorId).
import assert from 'node:assert/strict';
import test from 'node:test';
import type { FastifyInstance } from 'fastify';
import { assertError } from '../fixtures.js';
import { buildTestApp, call, createStaff, type TestUser } from '../helpers.js';

const ROUTE = '/channels/web/inbound';

async function setup(t: test.TestContext) {
  const app = await buildTestApp(t, { CHANNELS_DRY_RUN: 'true' });
  const admin = await createStaff(app, 'admin');
  return { app, admin };
}

async function widgetKey(app: FastifyInstance, admin: TestUser, name: string): Promise<string> {
  const res = await call(app, 'POST', '/api-keys', {
    token: admin.token,
    body: { name, scopes: ['channels:inbound'] },
  });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.data.key as string;
}

const post = (app: FastifyInstance, token: string, body: object) => call(app, 'POST', ROUTE, { token, body });

test('an anonymous visitor is known again by its visitorId: one guest, one conversation', async (t) => {
  const { app, admin } = await setup(t);
  const widget = await widgetKey(app, admin, 'lobby widget');
  const first = await post(app, widget, { guest: { visitorId: 'visitor-7f3a' }, content: 'Is the spa open?' });
  assert.equal(first.status, 201, JSON.stringify(first.body));
  assert.equal(first.data.guestCreated, true);
  assert.equal(first.data.conversationCreated, true);
  const again = await post(app, widget, { guest: { visitorId: 'visitor-7f3a' }, content: 'And until when?' });
  assert.equal(again.status, 201, JSON.stringify(again.body));
  assert.equal(again.data.guestId, first.data.guestId);
  assert.equal(again.data.conversationId, first.data.conversationId);
  assert.equal(again.data.guestCreated, false);
  assert.equal(again.data.conversationCreated, false);

  const guest = await call(app, 'GET', `/guests/${first.data.guestId}`, { token: admin.token });
  assert.equal(guest.status, 200);
  assert.equal(guest.data.name, 'Web visitor');
  assert.equal(guest.data.email, null);
  assert.equal(guest.data.phone, null);
  const messages = await call(app, 'GET', `/conversations/${first.data.conversationId}/messages`, {
    token: admin.token,
  });
  assert.deepEqual(
    messages.data.map((m: { content: string }) => m.content),
    ['Is the spa open?', 'And until when?'],
  );
  // Another visitor of the same widget is another guest.
  const other = await post(app, widget, { guest: { visitorId: 'visitor-9c1d' }, content: 'Hi' });
  assert.equal(other.status, 201, JSON.stringify(other.body));
  assert.notEqual(other.data.guestId, first.data.guestId);
});

test('a visitorId with a name makes a guest of that name, and the name does not change who it is', async (t) => {
  const { app, admin } = await setup(t);
  const first = await post(app, admin.token, { guest: { visitorId: 'v-ana', name: 'Ana Lopes' }, content: 'Hello' });
  assert.equal(first.status, 201, JSON.stringify(first.body));
  const guest = await call(app, 'GET', `/guests/${first.data.guestId}`, { token: admin.token });
  assert.equal(guest.data.name, 'Ana Lopes');
  const renamed = await post(app, admin.token, { guest: { visitorId: 'v-ana', name: 'Ana L.' }, content: 'Me again' });
  assert.equal(renamed.status, 201, JSON.stringify(renamed.body));
  assert.equal(renamed.data.guestId, first.data.guestId);
  // With an e-mail too, a new visitor joins the guest that e-mail already names, and stays theirs.
  const known = await post(app, admin.token, {
    guest: { name: 'Bea', email: 'bea@example.test' },
    content: 'From the booking form',
  });
  const linked = await post(app, admin.token, {
    guest: { visitorId: 'v-bea', email: 'BEA@example.test' },
    content: 'From the chat',
  });
  assert.equal(linked.status, 201, JSON.stringify(linked.body));
  assert.equal(linked.data.guestId, known.data.guestId);
  const later = await post(app, admin.token, { guest: { visitorId: 'v-bea' }, content: 'Still me' });
  assert.equal(later.data.guestId, known.data.guestId);
});

test("a visitorId is its caller's: another caller naming it reaches a guest of its own", async (t) => {
  const { app, admin } = await setup(t);
  const widgetA = await widgetKey(app, admin, 'widget A');
  const widgetB = await widgetKey(app, admin, 'widget B');
  const ana = await post(app, widgetA, {
    guest: { visitorId: 'shared-id', name: 'Ana' },
    content: 'My door code is 4711',
  });
  assert.equal(ana.status, 201, JSON.stringify(ana.body));
  const mallory = await post(app, widgetB, { guest: { visitorId: 'shared-id' }, content: 'What did I write?' });
  assert.equal(mallory.status, 201, JSON.stringify(mallory.body));
  assert.notEqual(mallory.data.guestId, ana.data.guestId);
  assert.notEqual(mallory.data.conversationId, ana.data.conversationId);
  assert.equal(mallory.data.guestCreated, true);
  assert.doesNotMatch(mallory.raw.body, /4711/);
  const byAdmin = await post(app, admin.token, { guest: { visitorId: 'shared-id' }, content: 'hi' });
  assert.notEqual(byAdmin.data.guestId, ana.data.guestId);
  assert.notEqual(byAdmin.data.guestId, mallory.data.guestId);
  // Each caller still finds its own.
  assert.equal(
    (await post(app, widgetA, { guest: { visitorId: 'shared-id' }, content: 'x' })).data.guestId,
    ana.data.guestId,
  );
  assert.equal(
    (await post(app, widgetB, { guest: { visitorId: 'shared-id' }, content: 'y' })).data.guestId,
    mallory.data.guestId,
  );
});

test("a visitor's first two messages at once make one guest", async (t) => {
  const { app, admin } = await setup(t);
  const widget = await widgetKey(app, admin, 'busy widget');
  const [a, b] = await Promise.all([
    post(app, widget, { guest: { visitorId: 'racer' }, content: 'one' }),
    post(app, widget, { guest: { visitorId: 'racer' }, content: 'two' }),
  ]);
  assert.equal(a.status, 201, JSON.stringify(a.body));
  assert.equal(b.status, 201, JSON.stringify(b.body));
  assert.equal(a.data.guestId, b.data.guestId);
  assert.equal(a.data.conversationId, b.data.conversationId);
});

test('a visitorId is 1 to 100 characters without NUL, and a guest needs an e-mail, a phone or a visitorId', async (t) => {
  const { app, admin } = await setup(t);
  for (const [what, visitorId] of [
    ['empty', ''],
    ['101 characters', 'v'.repeat(101)],
    ['a NUL', 'v\u0000x'],
    ['a number', 42],
  ] as const) {
    const res = await post(app, admin.token, { guest: { visitorId }, content: 'x' });
    assertError(res, 400, 'VALIDATION_ERROR', what);
    assert.ok(
      res.body.error.details.some((d: { field: string }) => d.field === 'guest.visitorId'),
      `${what}: ${JSON.stringify(res.body)}`,
    );
  }
  const longest = await post(app, admin.token, { guest: { visitorId: 'v'.repeat(100) }, content: 'x' });
  assert.equal(longest.status, 201, JSON.stringify(longest.body));

  for (const guest of [{ name: 'No contact' }, {}, { name: 'Nulls', email: null, phone: null }]) {
    const res = await post(app, admin.token, { guest, content: 'x' });
    assertError(res, 400, 'VALIDATION_ERROR', JSON.stringify(guest));
    assert.match(res.body.error.message, /^guest: .*visitorId/, JSON.stringify(res.body));
    assert.doesNotMatch(res.body.error.message, /is required|must match/);
  }
  for (const body of [
    { content: 'x' },
    { content: 'x', guestId: 'gst_01m00000000000000000000000', guest: { visitorId: 'v' } },
  ]) {
    const res = await post(app, admin.token, body);
    assertError(res, 400, 'VALIDATION_ERROR', JSON.stringify(body));
    assert.match(res.body.error.message, /^guestId: .*exactly one of guestId and guest/, JSON.stringify(res.body));
  }
});

test('the document states the rules of a web message: exactly one of guestId and guest, a guest known somehow', async (t) => {
  const { app, admin } = await setup(t);
  const doc = (await call(app, 'GET', '/api/v1/openapi.json')).body;
  const body = doc.paths['/api/v1/channels/web/inbound'].post.requestBody.content['application/json'];
  const required = (branches: { required?: string[] }[]) => branches.map((b) => b.required);
  assert.deepEqual(required(body.schema.oneOf), [['guestId'], ['guest']]);
  const guest = body.schema.properties.guest;
  assert.deepEqual(required(guest.anyOf), [['email'], ['phone'], ['visitorId']]);
  assert.equal(guest.properties.visitorId.minLength, 1);
  assert.equal(guest.properties.visitorId.maxLength, 100);
  assert.equal(guest.required, undefined, 'a name is optional');
  // The example the document shows is one the server takes.
  const example = body.example;
  assert.ok(example.guest?.visitorId, JSON.stringify(example));
  const res = await post(app, admin.token, example);
  assert.equal(res.status, 201, JSON.stringify(res.body));
});
