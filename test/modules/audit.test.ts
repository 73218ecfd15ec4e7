// The audit log (CONTRACT §11): logins (failed too), logouts, password, staff, settings and API key
// changes, webhook secret rotations and 403 refusals, with actor, IP, user agent and request id;
// readable by an admin only, filtered and paged, and never editable.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { assertError, login } from '../fixtures.js';
import { buildTestApp, call, createStaff, PASSWORD } from '../helpers.js';

test('the log shows a login, a failed one, a key created and revoked, and a refusal, newest first', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const staff = await createStaff(app, 'staff');
  assert.equal((await login(app, admin.email, PASSWORD)).status, 200);
  assert.equal((await login(app, admin.email, 'wrong password!')).status, 401);
  const key = await call(app, 'POST', '/api-keys', {
    token: admin.token,
    body: { name: 'PMS', scopes: ['guests:read'] },
    headers: { 'user-agent': 'crm-sync/1.0', 'x-request-id': 'req-create-key' },
  });
  assert.equal(key.status, 201);
  assert.equal((await call(app, 'DELETE', `/api-keys/${key.data.id}`, { token: admin.token })).status, 200);
  assertError(await call(app, 'GET', '/settings', { token: staff.token }), 403, 'FORBIDDEN');

  const log = await call(app, 'GET', '/audit-log', { token: admin.token });
  assert.equal(log.status, 200, log.raw.body);
  assert.deepEqual(
    log.data.map((e: { action: string }) => e.action),
    ['access.denied', 'api_key.revoked', 'api_key.created', 'auth.login_failed', 'auth.login'],
  );
  const [denied, revoked, created, failed, ok] = log.data;
  assert.deepEqual(ok.actor, { type: 'staff', id: admin.id });
  assert.deepEqual(failed.actor, null);
  assert.deepEqual(failed.target, { type: 'email', id: admin.email.toLowerCase() });
  assert.deepEqual(created.actor, { type: 'staff', id: admin.id });
  assert.deepEqual(created.target, { type: 'api_key', id: key.data.id });
  assert.equal(created.userAgent, 'crm-sync/1.0');
  assert.equal(created.requestId, 'req-create-key');
  assert.ok(created.ip);
  assert.deepEqual(revoked.target, { type: 'api_key', id: key.data.id });
  assert.deepEqual(denied.actor, { type: 'staff', id: staff.id });
  assert.deepEqual(denied.target, { type: 'route', id: 'GET /api/v1/settings' });

  const filtered = await call(app, 'GET', `/audit-log?action=auth.login&actor=${admin.id}`, { token: admin.token });
  assert.deepEqual(
    filtered.data.map((e: { id: string }) => e.id),
    [ok.id],
  );
  const future = await call(app, 'GET', '/audit-log?from=2999-01-01T00:00:00Z', { token: admin.token });
  assert.equal(future.body.meta.total, 0);
  const past = await call(app, 'GET', `/audit-log?to=${encodeURIComponent(ok.createdAt)}`, { token: admin.token });
  assert.equal(past.body.meta.total, 0, '`to` is exclusive');
  const page = await call(app, 'GET', '/audit-log?limit=2', { token: admin.token });
  assert.ok(page.body.meta.nextCursor);
  const next = await call(app, 'GET', `/audit-log?limit=2&cursor=${page.body.meta.nextCursor}`, { token: admin.token });
  assert.deepEqual(
    next.data.map((e: { id: string }) => e.id),
    [log.data[2].id, log.data[3].id],
  );
});

test('staff, settings, password, logout and webhook secret changes are logged; only admins read the log', async (t) => {
  const app = await buildTestApp(t, { WEBHOOK_ALLOW_PRIVATE: 'true' });
  const admin = await createStaff(app, 'admin');
  const manager = await createStaff(app, 'manager');
  const token = admin.token;
  const member = await call(app, 'POST', '/staff', {
    token,
    body: { name: 'New Member', email: 'new.member@hotel.test', role: 'staff' },
  });
  await call(app, 'PATCH', `/staff/${member.data.id}`, { token, body: { name: 'Renamed' } });
  await call(app, 'PUT', '/settings/custom.colour', { token, body: { value: 'blue' } });
  const hook = await call(app, 'POST', '/webhooks', { token, body: { url: 'http://127.0.0.1:9/h', events: ['*'] } });
  await call(app, 'POST', `/webhooks/${hook.data.id}/rotate-secret`, { token });
  const session = await login(app, manager.email, PASSWORD);
  await call(app, 'POST', '/auth/password', {
    token: session.data.token,
    body: { currentPassword: PASSWORD, newPassword: 'another long passphrase 2026' },
  });
  await call(app, 'POST', '/auth/logout', { token });
  const fresh = (await login(app, admin.email, PASSWORD)).data.token;

  const log = await call(app, 'GET', '/audit-log?limit=100', { token: fresh });
  const actions = log.data.map((e: { action: string; target: unknown }) => [e.action, e.target]);
  assert.deepEqual(actions.reverse(), [
    ['staff.created', { type: 'staff', id: member.data.id }],
    ['staff.updated', { type: 'staff', id: member.data.id }],
    ['settings.updated', { type: 'setting', id: 'custom.colour' }],
    ['webhook.secret_rotated', { type: 'webhook', id: hook.data.id }],
    ['auth.login', null],
    ['auth.password_changed', null],
    ['auth.logout', null],
    ['auth.login', null],
  ]);
  const other = await createStaff(app, 'manager');
  assertError(await call(app, 'GET', '/audit-log', { token: other.token }), 403, 'FORBIDDEN');
});

test('an API key cannot read the log, and the store refuses to edit an entry', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const key = await call(app, 'POST', '/api-keys', {
    token: admin.token,
    body: { name: 'all', scopes: ['staff:read', 'settings:read'] },
  });
  assertError(await call(app, 'GET', '/audit-log', { token: key.data.key }), 403, 'FORBIDDEN');
  await assert.rejects(app.ctx.store.db.updateTable('audit_log').set({ action: 'auth.login' }).execute());
  await assert.rejects(app.ctx.store.db.deleteFrom('audit_log').execute());
  const log = await call(app, 'GET', '/audit-log', { token: admin.token });
  assert.deepEqual(
    log.data.map((e: { action: string; actor: unknown }) => [e.action, e.actor]),
    [
      ['access.denied', { type: 'api_key', id: key.data.id }],
      ['api_key.created', { type: 'staff', id: admin.id }],
    ],
  );
});
