// ETags (docs/integrations.md): one-record answers carry an ETag, If-None-Match gives 304, and If-Match on
// a write is checked in the write's own transaction, so of two writers with one ETag one gets 412.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { assertError, insertGuest, openConversation } from '../fixtures.js';
import { buildTestApp, call, createStaff } from '../helpers.js';

test('a GET carries an ETag; If-None-Match with it is a 304 without a body; a write changes it', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const created = await call(app, 'POST', '/guests', { token: admin.token, body: { name: 'Ana Tag' } });
  const url = `/guests/${created.data.id}`;
  const first = await call(app, 'GET', url, { token: admin.token });
  const etag = String(first.headers.etag);
  assert.match(etag, /^"[A-Za-z0-9_-]{27}"$/);
  assert.equal(created.headers.etag, etag, 'the create answer carries the same ETag');

  const cached = await call(app, 'GET', url, { token: admin.token, headers: { 'if-none-match': etag } });
  assert.equal(cached.status, 304);
  assert.equal(cached.raw.body, '');
  assert.equal(cached.headers.etag, etag);
  assert.ok(cached.headers['x-request-id']);
  assert.ok(cached.headers['x-ratelimit-limit']);
  const weak = await call(app, 'GET', url, { token: admin.token, headers: { 'if-none-match': `"x", W/${etag}` } });
  assert.equal(weak.status, 304, 'weak comparison, lists');

  const changed = await call(app, 'PATCH', url, { token: admin.token, body: { notes: 'late check-in' } });
  assert.notEqual(changed.headers.etag, etag);
  const after = await call(app, 'GET', url, { token: admin.token, headers: { 'if-none-match': etag } });
  assert.equal(after.status, 200);
  assert.equal(after.headers.etag, changed.headers.etag, 'the write answer ETag is what a GET then gives');
  const list = await call(app, 'GET', '/guests', { token: admin.token });
  assert.equal(list.headers.etag, undefined, 'lists carry none');
});

test('a stale If-Match is 412 PRECONDITION_FAILED and changes nothing; the current one passes', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const created = await call(app, 'POST', '/guests', { token: admin.token, body: { name: 'Ana Match' } });
  const url = `/guests/${created.data.id}`;
  const old = String(created.headers.etag);
  const moved = await call(app, 'PATCH', url, {
    token: admin.token,
    body: { notes: 'first' },
    headers: { 'if-match': old },
  });
  assert.equal(moved.status, 200, moved.raw.body);
  const refused = await call(app, 'PATCH', url, {
    token: admin.token,
    body: { notes: 'second' },
    headers: { 'if-match': old },
  });
  assertError(refused, 412, 'PRECONDITION_FAILED');
  assert.equal((await call(app, 'GET', url, { token: admin.token })).data.notes, 'first');
  const star = await call(app, 'PATCH', url, {
    token: admin.token,
    body: { notes: 'any' },
    headers: { 'if-match': '*' },
  });
  assert.equal(star.status, 200);
  const weak = await call(app, 'PATCH', url, {
    token: admin.token,
    body: { notes: 'weak' },
    headers: { 'if-match': `W/${star.headers.etag}` },
  });
  assertError(weak, 412, 'PRECONDITION_FAILED', 'a weak tag never matches If-Match');
});

test('of racing writers sending one ETag, exactly one passes', async (t) => {
  const app = await buildTestApp(t, { RATE_LIMIT_STANDARD: '1000' });
  const admin = await createStaff(app, 'admin');
  const guestId = await insertGuest(app);
  const conversation = await openConversation(app, admin.token, { guestId, channel: 'web' });
  const url = `/conversations/${conversation.id}`;
  const etag = String((await call(app, 'GET', url, { token: admin.token })).headers.etag);
  const writers = ['closed', 'pending', 'closed', 'pending', 'closed', 'pending', 'closed', 'pending'].map((status) =>
    call(app, 'PATCH', url, { token: admin.token, body: { status }, headers: { 'if-match': etag } }),
  );
  const answers = await Promise.all(writers);
  const passed = answers.filter((r) => r.status === 200);
  assert.equal(passed.length, 1, answers.map((r) => r.status).join(','));
  for (const r of answers) if (r.status !== 200) assertError(r, 412, 'PRECONDITION_FAILED');
});

test('every write route that takes If-Match accepts the ETag its GET gave', async (t) => {
  const app = await buildTestApp(t, { WEBHOOK_ALLOW_PRIVATE: 'true' });
  const admin = await createStaff(app, 'admin');
  const staff = await createStaff(app, 'staff');
  const token = admin.token;
  const guest = (await call(app, 'POST', '/guests', { token, body: { name: 'G' } })).data;
  const conversation = await openConversation(app, token, { guestId: guest.id, channel: 'web' });
  const task = (await call(app, 'POST', '/tasks', { token, body: { title: 'T', department: 'housekeeping' } })).data;
  const entry = (await call(app, 'POST', '/knowledge', { token, body: { title: 'K', content: 'c', category: 'x' } }))
    .data;
  const hook =
    // Subscribed to an event this test causes only last: a failed delivery updates the endpoint's row
    // (and so its ETag) whenever the dispatcher gets to it, between the GET and the PATCH below.
    (
      await call(app, 'POST', '/webhooks', {
        token,
        body: { url: 'http://127.0.0.1:9/hook', events: ['knowledge.deleted'] },
      })
    ).data;
  const key = (await call(app, 'POST', '/api-keys', { token, body: { name: 'k', scopes: ['guests:read'] } })).data;
  const cases: [string, 'PATCH' | 'PUT' | 'DELETE', unknown][] = [
    [`/guests/${guest.id}`, 'PATCH', { notes: 'n' }],
    [`/conversations/${conversation.id}`, 'PATCH', { status: 'pending' }],
    [`/tasks/${task.id}`, 'PATCH', { notes: 'n' }],
    [`/knowledge/${entry.id}`, 'PUT', { title: 'K2', content: 'c2' }],
    [`/staff/${staff.id}`, 'PATCH', { name: 'Renamed' }],
    ['/settings/hotel', 'PUT', { value: { name: 'Miramar', timezone: 'Europe/Lisbon', locale: 'pt-PT' } }],
    [`/webhooks/${hook.id}`, 'PATCH', { description: 'd' }],
    [`/api-keys/${key.id}`, 'PATCH', { name: 'k2' }],
    [`/knowledge/${entry.id}`, 'DELETE', undefined],
  ];
  for (const [url, method, body] of cases) {
    const etag = String((await call(app, 'GET', url, { token })).headers.etag);
    const stale = await call(app, method, url, { token, body, headers: { 'if-match': '"stale"' } });
    assertError(stale, 412, 'PRECONDITION_FAILED', `${method} ${url}`);
    const res = await call(app, method, url, { token, body, headers: { 'if-match': etag } });
    assert.equal(res.status, 200, `${method} ${url}: ${res.raw.body}`);
  }
});

test('If-Match on a PUT that would create a setting is 412: there is no current one to match', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  for (const etag of ['"abc"', '*']) {
    const res = await call(app, 'PUT', '/settings/custom.fresh', {
      token: admin.token,
      headers: { 'if-match': etag },
      body: { value: 1 },
    });
    assert.equal(res.status, 412, `If-Match ${etag}: ${JSON.stringify(res.body)}`);
  }
  assert.equal((await call(app, 'GET', '/settings/custom.fresh', { token: admin.token })).status, 404);
  // Without If-Match it is created; with its ETag it is then changed; a known key's default matches.
  const made = await call(app, 'PUT', '/settings/custom.fresh', { token: admin.token, body: { value: 1 } });
  assert.equal(made.status, 200);
  const changed = await call(app, 'PUT', '/settings/custom.fresh', {
    token: admin.token,
    headers: { 'if-match': String(made.headers.etag) },
    body: { value: 2 },
  });
  assert.equal(changed.status, 200);
  const hotel = await call(app, 'GET', '/settings/hotel', { token: admin.token });
  const set = await call(app, 'PUT', '/settings/hotel', {
    token: admin.token,
    headers: { 'if-match': String(hotel.headers.etag) },
    body: { value: { name: 'Miramar', timezone: 'Europe/Lisbon', locale: 'pt-PT' } },
  });
  assert.equal(set.status, 200);
  // A write whose record is missing is 404 as it would be without If-Match.
  const missing = await call(app, 'PATCH', '/guests/gst_01m00000000000000000000000', {
    token: admin.token,
    headers: { 'if-match': '"abc"' },
    body: { notes: 'x' },
  });
  assert.equal(missing.status, 404);
});
