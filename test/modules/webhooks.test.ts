// Managing webhooks through HTTP: admin only, validation, secrets shown once (creation, rotation),
// URLs that reach into private networks refused unless allowed, at save time and at delivery time.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { guardedLookup, isPublicAddress } from '../../src/modules/webhooks/url-guard.js';
import { buildTestApp, call, createStaff } from '../helpers.js';
import { readFeed, registerWebhook, signatureValid, startReceiver, WEBHOOK_ENV } from './events-helpers.js';

test('only admins manage webhooks: managers and staff get 403 on every route', async (t) => {
  const app = await buildTestApp(t, WEBHOOK_ENV);
  const admin = await createStaff(app, 'admin');
  const hook = await registerWebhook(app, admin.token, 'http://127.0.0.1:9/hook');
  const routes: [string, string, unknown?][] = [
    ['POST', '/webhooks', { url: 'http://127.0.0.1:9/x', events: ['*'] }],
    ['GET', '/webhooks'],
    ['GET', `/webhooks/${hook.id}`],
    ['PATCH', `/webhooks/${hook.id}`, { active: false }],
    ['DELETE', `/webhooks/${hook.id}`],
    ['POST', `/webhooks/${hook.id}/rotate-secret`],
    ['POST', `/webhooks/${hook.id}/test`],
    ['GET', `/webhooks/${hook.id}/deliveries`],
    ['POST', `/webhooks/${hook.id}/deliveries/whd_x/redeliver`],
  ];
  for (const role of ['manager', 'staff'] as const) {
    const user = await createStaff(app, role);
    for (const [method, url, body] of routes) {
      const res = await call(app, method as 'GET', url, { token: user.token, body });
      assert.equal(res.status, 403, `${role} ${method} ${url}`);
    }
  }
  assert.equal((await call(app, 'GET', '/webhooks')).status, 401);
});

test('create, read, change and delete an endpoint; the secret is shown only at creation', async (t) => {
  const app = await buildTestApp(t, WEBHOOK_ENV);
  const admin = await createStaff(app, 'admin');
  const created = await call(app, 'POST', '/webhooks', {
    token: admin.token,
    body: { url: 'http://127.0.0.1:9/hook', events: ['guest.created', 'task.completed'], description: 'CRM sync' },
  });
  assert.equal(created.status, 201);
  const hook = created.data;
  assert.match(hook.id, /^whk_[0-9a-z]{26}$/);
  assert.match(hook.secret, /^whsec_[A-Za-z0-9_-]{43}$/);
  assert.equal(hook.active, true);
  assert.equal(hook.consecutiveFailures, 0);
  assert.deepEqual(hook.events, ['guest.created', 'task.completed']);

  const got = await call(app, 'GET', `/webhooks/${hook.id}`, { token: admin.token });
  assert.equal(got.status, 200);
  const list = await call(app, 'GET', '/webhooks', { token: admin.token });
  assert.equal(list.body.meta.total, 1);
  const changed = await call(app, 'PATCH', `/webhooks/${hook.id}`, {
    token: admin.token,
    body: { events: ['*'], description: null, active: false },
  });
  assert.equal(changed.status, 200);
  assert.deepEqual([changed.data.events, changed.data.description, changed.data.active], [['*'], null, false]);
  for (const body of [got.body, list.body, changed.body]) {
    assert.equal(JSON.stringify(body).includes('secret'), false, 'no secret after creation');
    assert.equal(JSON.stringify(body).includes(hook.secret), false);
  }

  const deleted = await call(app, 'DELETE', `/webhooks/${hook.id}`, { token: admin.token });
  assert.deepEqual(deleted.data, { id: hook.id, deleted: true });
  assert.equal((await call(app, 'GET', `/webhooks/${hook.id}`, { token: admin.token })).status, 404);
  assert.equal((await call(app, 'GET', `/webhooks/${hook.id}/deliveries`, { token: admin.token })).status, 404);
  assert.equal((await call(app, 'DELETE', `/webhooks/${hook.id}`, { token: admin.token })).status, 404);
});

test('bad bodies are VALIDATION_ERRORs naming the field', async (t) => {
  const app = await buildTestApp(t, WEBHOOK_ENV);
  const admin = await createStaff(app, 'admin');
  const cases: [unknown, string][] = [
    [{ events: ['*'] }, 'url'],
    [{ url: 'http://127.0.0.1:9/x' }, 'events'],
    [{ url: 'http://127.0.0.1:9/x', events: [] }, 'events'],
    [{ url: 'http://127.0.0.1:9/x', events: ['guest.exploded'] }, 'events.0'],
    [{ url: 'http://127.0.0.1:9/x', events: ['*', 'guest.created'] }, 'events'],
    [{ url: 'http://127.0.0.1:9/x', events: ['webhook.test'] }, 'events.0'],
    [{ url: 'ftp://example.com/x', events: ['*'] }, 'url'],
    [{ url: 'not a url', events: ['*'] }, 'url'],
    [{ url: 'http://user:pw@127.0.0.1:9/x', events: ['*'] }, 'url'],
    [{ url: 'http://127.0.0.1:9/x', events: ['*'], secret: 'mine' }, 'secret'],
  ];
  for (const [body, field] of cases) {
    const res = await call(app, 'POST', '/webhooks', { token: admin.token, body });
    assert.equal(res.status, 400, JSON.stringify(body));
    assert.equal(res.body.error.code, 'VALIDATION_ERROR');
    assert.ok(
      res.body.error.details.some((d: { field: string }) => d.field === field),
      `${JSON.stringify(body)} → ${JSON.stringify(res.body.error.details)}`,
    );
  }
  const hook = await registerWebhook(app, admin.token, 'http://127.0.0.1:9/hook');
  assert.equal((await call(app, 'PATCH', `/webhooks/${hook.id}`, { token: admin.token, body: {} })).status, 400);
  assert.equal(
    (await call(app, 'PATCH', '/webhooks/whk_missing', { token: admin.token, body: { active: true } })).status,
    404,
  );
});

test('URLs on loopback, private, link-local, unspecified or multicast addresses are refused without WEBHOOK_ALLOW_PRIVATE', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  for (const url of [
    'http://127.0.0.1:8080/hook',
    'http://localhost/hook',
    'http://[::1]/hook',
    'http://10.1.2.3/hook',
    'http://172.20.0.1/hook',
    'http://192.168.1.10/hook',
    'http://169.254.169.254/latest/meta-data',
    'http://0.0.0.0/hook',
    'http://[::ffff:127.0.0.1]/hook',
    'http://[fd00::1]/hook',
    'http://[fe80::1]/hook',
    'http://224.0.0.1/hook',
    'http://2130706433/hook',
  ]) {
    const res = await call(app, 'POST', '/webhooks', { token: admin.token, body: { url, events: ['*'] } });
    assert.equal(res.status, 400, url);
    assert.deepEqual(
      res.body.error.details.map((d: { field: string }) => d.field),
      ['url'],
      url,
    );
  }
  // The same check on PATCH.
  const row = await app.ctx.store.db
    .insertInto('webhooks')
    .values({
      id: 'whk_00000000000000000000000000',
      url: 'https://example.com/hook',
      events: '["*"]',
      description: null,
      active: 1,
      secret: 'whsec_x',
      consecutive_failures: 0,
      created_at: new Date().toISOString(),
      updated_at: new Date().toISOString(),
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  const patched = await call(app, 'PATCH', `/webhooks/${row.id}`, {
    token: admin.token,
    body: { url: 'http://127.0.0.1/x' },
  });
  assert.equal(patched.status, 400);

  assert.ok(isPublicAddress('93.184.216.34'));
  assert.ok(isPublicAddress('2606:4700::1111'));
  for (const a of ['127.0.0.1', '::1', '::', '10.0.0.1', '100.64.0.1', 'fc00::1', '::ffff:7f00:1', '255.255.255.255']) {
    assert.equal(isPublicAddress(a), false, a);
  }
});

test('the address is checked again when delivering: a stored private URL gets nothing (DNS rebinding)', async (t) => {
  const app = await buildTestApp(t, { WEBHOOK_RETRY_BASE_MS: '20', EVENT_POLL_INTERVAL_MS: '50' });
  const admin = await createStaff(app, 'admin');
  const rx = await startReceiver(t);
  // As if the host had resolved to a public address when the URL was saved.
  const now = new Date().toISOString();
  await app.ctx.store.db
    .insertInto('webhooks')
    .values({
      id: 'whk_00000000000000000000000001',
      url: rx.url,
      events: '["*"]',
      description: null,
      active: 1,
      secret: 'whsec_x',
      consecutive_failures: 0,
      created_at: now,
      updated_at: now,
    })
    .execute();
  await call(app, 'POST', '/guests', { token: admin.token, body: { name: 'Rebound' } });
  let delivery: { status: string; lastError: string | null } | undefined;
  for (let i = 0; i < 100 && delivery?.status !== 'failed'; i++) {
    await new Promise((r) => setTimeout(r, 20));
    const res = await call(app, 'GET', '/webhooks/whk_00000000000000000000000001/deliveries', { token: admin.token });
    delivery = res.data[0];
  }
  assert.equal(delivery?.status, 'failed');
  assert.match(String(delivery?.lastError), /not a public address/);
  assert.equal(rx.received.length, 0);

  const refused = await new Promise<string>((resolve) =>
    guardedLookup('localhost', { all: true }, (err) => resolve(String((err as { code?: string })?.code))),
  );
  assert.equal(refused, 'EADDRBLOCKED');
});

test('rotate-secret shows a new secret once; deliveries are signed with it from then on', async (t) => {
  const app = await buildTestApp(t, WEBHOOK_ENV);
  const admin = await createStaff(app, 'admin');
  const rx = await startReceiver(t);
  const hook = await registerWebhook(app, admin.token, rx.url);
  const rotated = await call(app, 'POST', `/webhooks/${hook.id}/rotate-secret`, { token: admin.token });
  assert.equal(rotated.status, 200);
  assert.match(rotated.data.secret, /^whsec_/);
  assert.notEqual(rotated.data.secret, hook.secret);
  assert.equal((await call(app, 'POST', '/webhooks/whk_missing/rotate-secret', { token: admin.token })).status, 404);

  await call(app, 'POST', '/guests', { token: admin.token, body: { name: 'Signed' } });
  const [got] = await rx.waitFor(1);
  assert.ok(signatureValid(rotated.data.secret, got!));
  assert.equal(signatureValid(hook.secret, got!), false);
});

test('POST /webhooks/:id/test sends webhook.test to that endpoint only', async (t) => {
  const app = await buildTestApp(t, WEBHOOK_ENV);
  const admin = await createStaff(app, 'admin');
  const a = await startReceiver(t);
  const b = await startReceiver(t);
  const hookA = await registerWebhook(app, admin.token, a.url);
  await registerWebhook(app, admin.token, b.url);
  const res = await call(app, 'POST', `/webhooks/${hookA.id}/test`, { token: admin.token });
  assert.equal(res.status, 202);
  assert.equal(res.data.eventType, 'webhook.test');
  assert.equal(res.data.status, 'pending');
  const [got] = await a.waitFor(1);
  assert.equal(got!.json.event.type, 'webhook.test');
  assert.equal(got!.json.id, res.data.id);
  assert.equal(got!.json.event.data.id, hookA.id);
  assert.ok(signatureValid(hookA.secret, got!));
  await new Promise((r) => setTimeout(r, 200));
  assert.equal(b.received.length, 0);

  await call(app, 'PATCH', `/webhooks/${hookA.id}`, { token: admin.token, body: { active: false } });
  const inactive = await call(app, 'POST', `/webhooks/${hookA.id}/test`, { token: admin.token });
  assert.equal(inactive.status, 409);
  assert.equal(inactive.body.error.code, 'CONFLICT');
});

test('creating, changing and deleting a webhook writes webhook.created, .updated and .deleted, never the secret', async (t) => {
  const app = await buildTestApp(t, WEBHOOK_ENV);
  const admin = await createStaff(app, 'admin');
  const key = await call(app, 'POST', '/api-keys', {
    token: admin.token,
    body: { name: 'CRM', scopes: ['webhooks:write'] },
  });
  const created = await call(app, 'POST', '/webhooks', {
    token: key.data.key,
    body: { url: 'http://127.0.0.1:9/hook', events: ['guest.created'] },
  });
  assert.equal(created.status, 201);
  const id = created.data.id;
  await call(app, 'PATCH', `/webhooks/${id}`, { token: admin.token, body: { description: 'CRM sync' } });
  assert.equal((await call(app, 'DELETE', `/webhooks/${id}`, { token: admin.token })).status, 200);
  const events = (await readFeed(app, admin.token, '&types=webhook.created,webhook.updated,webhook.deleted')).filter(
    (e) => (e.data as { id?: string }).id === id,
  );
  assert.deepEqual(
    events.map((e) => [e.type, e.actor]),
    [
      ['webhook.created', { type: 'api_key', id: key.data.id }],
      ['webhook.updated', { type: 'staff', id: admin.id }],
      ['webhook.deleted', { type: 'staff', id: admin.id }],
    ],
  );
  assert.deepEqual(events[1]!.changes, { description: { from: null, to: 'CRM sync' } });
  assert.equal(
    (events[2]!.data as { description: string }).description,
    'CRM sync',
    'a deletion carries the record as it was',
  );
  assert.ok(
    events.every((e) => !JSON.stringify(e).includes('whsec_')),
    'no secret in any event',
  );
});

test('an endpoint subscribed to "*" gets its own webhook.created first, proving the path end to end', async (t) => {
  const app = await buildTestApp(t, WEBHOOK_ENV);
  const admin = await createStaff(app, 'admin');
  const rx = await startReceiver(t);
  const hook = await registerWebhook(app, admin.token, rx.url, ['*']);
  const [first] = await rx.waitFor(1, 5_000);
  assert.equal(first!.json.event.type, 'webhook.created');
  assert.equal(first!.json.event.data.id, hook.id);
  assert.ok(signatureValid(hook.secret, first!));
});
