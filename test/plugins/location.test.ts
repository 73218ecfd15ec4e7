// Every 201 that creates a record carries Location, the URL of that record's GET,
// on the first answer and on its idempotent replay; the document says so.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp, call, createStaff } from '../helpers.js';

test('every 201 that creates a record carries Location, the URL of its GET, also when replayed', async (t) => {
  const app = await buildTestApp(t, { WEBHOOK_ALLOW_PRIVATE: 'true' });
  const admin = await createStaff(app, 'admin');
  const guest = await call(app, 'POST', '/guests', {
    token: admin.token,
    body: { name: 'Ana', email: 'ana@hotel.test' },
  });
  const conversation = await call(app, 'POST', '/conversations', {
    token: admin.token,
    body: { guestId: guest.data.id, channel: 'web' },
  });
  const creates: [string, Record<string, unknown>][] = [
    ['/guests', { name: 'Tom' }],
    ['/conversations', { guestId: guest.data.id, channel: 'web' }],
    [`/conversations/${conversation.data.id}/messages`, { content: 'Hello', type: 'note' }],
    ['/tasks', { title: 'Fix the shower', department: 'maintenance' }],
    ['/knowledge', { title: 'Breakfast', content: 'From 7 to 10', category: 'dining' }],
    ['/staff', { name: 'New Colleague', email: 'new.colleague@hotel.test', role: 'staff' }],
    ['/api-keys', { name: 'PMS', scopes: ['guests:read'] }],
    ['/webhooks', { url: 'http://127.0.0.1:9/hook', events: ['*'] }],
  ];
  for (const [path, body] of creates) {
    const headers = { 'idempotency-key': `location-${path}` };
    const res = await call(app, 'POST', path, { token: admin.token, body, headers });
    assert.equal(res.status, 201, `${path}: ${JSON.stringify(res.body)}`);
    const location = String(res.headers.location);
    assert.equal(location, `/api/v1${path}/${res.data.id}`, path);
    const got = await call(app, 'GET', location, { token: admin.token });
    assert.equal(got.status, 200, `${path}: GET ${location}`);
    assert.equal(got.data.id, res.data.id);
    const replay = await call(app, 'POST', path, { token: admin.token, body, headers });
    assert.equal(replay.headers['idempotent-replayed'], 'true', path);
    assert.equal(replay.headers.location, location, `${path}: the replay carries it too`);
  }
  // An inbound message's answer is a receipt: its Location is the stored message.
  const inbound = await call(app, 'POST', '/channels/web/inbound', {
    token: admin.token,
    body: { guestId: guest.data.id, content: 'Is the pool open?', externalId: 'widget-1' },
  });
  assert.equal(inbound.status, 201);
  const message = await call(app, 'GET', String(inbound.headers.location), { token: admin.token });
  assert.equal(message.status, 200, String(inbound.headers.location));
  assert.equal(message.data.id, inbound.data.message.id);
  // Answers that create nothing carry none.
  const listed = await call(app, 'GET', '/guests', { token: admin.token });
  assert.equal(listed.headers.location, undefined);
});

test('the document gives every 201 a Location header, but a stream ticket (nothing to read back)', async (t) => {
  const app = await buildTestApp(t);
  const doc = (await call(app, 'GET', '/api/v1/openapi.json')).body as {
    paths: Record<string, Record<string, { responses?: Record<string, { headers?: Record<string, unknown> }> }>>;
  };
  let created = 0;
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      const res = op.responses?.['201'];
      if (res === undefined || `${method} ${path}` === 'post /api/v1/events/stream-tickets') continue;
      created++;
      assert.ok(res.headers?.Location, `${method.toUpperCase()} ${path}: 201 without Location`);
    }
  }
  assert.ok(created >= 8);
});
