// The audit log (docs/integrations.md): logins (failed too), logouts, password, staff, settings and API key
// changes, webhook secret rotations and 403 refusals, with actor, IP, user agent and request id;
// readable by an admin only, filtered and paged, and never editable.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
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
    ['webhook.created', { type: 'webhook', id: hook.data.id }],
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

/** Makes every insert into the audit log fail (a disk full, a lost connection), on either store. */
async function breakAuditLog(app: FastifyInstance): Promise<() => Promise<void>> {
  const { db } = app.ctx.store;
  if (app.ctx.store.dialect === 'sqlite') {
    await sql`create trigger audit_log_down before insert on audit_log
      begin select raise(abort, 'the audit log is down'); end`.execute(db);
    return async () => void (await sql`drop trigger audit_log_down`.execute(db));
  }
  await sql`create function audit_log_down() returns trigger language plpgsql as $$
    begin raise exception 'the audit log is down'; end $$`.execute(db);
  await sql`create trigger audit_log_down before insert on audit_log
    for each row execute function audit_log_down()`.execute(db);
  return async () => {
    await sql`drop trigger audit_log_down on audit_log`.execute(db);
    await sql`drop function audit_log_down()`.execute(db);
  };
}

const actions = async (app: FastifyInstance, token: string) =>
  (await call(app, 'GET', '/audit-log?limit=100', { token })).data.map((e: { action: string }) => e.action).reverse();

test('a replay of POST /api-keys with the same Idempotency-Key leaves one api_key.created entry', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const send = () =>
    call(app, 'POST', '/api-keys', {
      token: admin.token,
      body: { name: 'PMS', scopes: ['guests:read'] },
      headers: { 'idempotency-key': 'create-pms-key' },
    });
  const first = await send();
  const again = await send();
  assert.equal(first.status, 201);
  assert.equal(again.headers['idempotent-replayed'], 'true');
  assert.equal(again.data.id, first.data.id);
  assert.deepEqual(await actions(app, admin.token), ['api_key.created']);
});

test('a change whose audit entry cannot be written is not made; a refused change leaves no entry', async (t) => {
  const app = await buildTestApp(t, { WEBHOOK_ALLOW_PRIVATE: 'true' });
  const admin = await createStaff(app, 'admin');
  const token = admin.token;
  const member = await createStaff(app, 'staff');
  const manager = await createStaff(app, 'manager');
  const session = (await login(app, manager.email, PASSWORD)).data.token as string;
  const key = await call(app, 'POST', '/api-keys', { token, body: { name: 'PMS', scopes: ['guests:read'] } });
  const hook = await call(app, 'POST', '/webhooks', {
    token,
    body: { url: 'http://127.0.0.1:9/h', events: ['guest.created'] },
  });
  const snapshot = async () => ({
    staff: (await call(app, 'GET', '/staff?limit=100', { token })).data,
    keys: (await call(app, 'GET', '/api-keys?limit=100', { token })).data,
    hooks: (await call(app, 'GET', '/webhooks?limit=100', { token })).data,
    setting: (await call(app, 'GET', '/settings/custom.colour', { token })).status,
  });
  const logged = await actions(app, token);
  const before = await snapshot();

  const repair = await breakAuditLog(app);
  const changes: [string, string, unknown?, string?][] = [
    ['POST', '/staff', { name: 'New Member', email: 'new.member@hotel.test', role: 'staff' }],
    ['PATCH', `/staff/${member.id}`, { name: 'Renamed' }],
    ['PUT', '/settings/custom.colour', { value: 'blue' }],
    ['POST', '/api-keys', { name: 'Another', scopes: ['guests:read'] }],
    ['PATCH', `/api-keys/${key.data.id}`, { name: 'Renamed' }],
    ['POST', `/api-keys/${key.data.id}/rotate`, { graceSeconds: 0 }],
    ['DELETE', `/api-keys/${key.data.id}`],
    ['POST', '/webhooks', { url: 'http://127.0.0.1:9/other', events: ['*'] }],
    ['PATCH', `/webhooks/${hook.data.id}`, { description: 'changed' }],
    ['POST', `/webhooks/${hook.data.id}/rotate-secret`],
    ['DELETE', `/webhooks/${hook.data.id}`],
    ['POST', '/auth/password', { currentPassword: PASSWORD, newPassword: 'another long passphrase 2026' }, session],
    ['POST', '/auth/logout', undefined, session],
  ];
  for (const [method, url, body, as] of changes) {
    const res = await call(app, method as 'GET', url, { token: as ?? token, body });
    assertError(res, 500, 'INTERNAL_ERROR', `${method} ${url}`);
  }
  await repair();
  assert.deepEqual(await snapshot(), before, 'no change was made without its entry');
  assert.equal((await call(app, 'GET', '/auth/me', { token: session })).status, 200, 'the session was not ended');

  // Refused changes (409, 400, 404) roll back and leave no entry either.
  assert.equal((await call(app, 'PATCH', `/staff/${admin.id}`, { token, body: { role: 'staff' } })).status, 409);
  assert.equal(
    (
      await call(app, 'POST', '/api-keys', {
        token,
        body: { name: 'x', scopes: [], expiresAt: '2000-01-01T00:00:00Z' },
      })
    ).status,
    400,
  );
  assert.equal((await call(app, 'DELETE', '/webhooks/whk_missing', { token })).status, 404);
  assert.deepEqual(await actions(app, token), logged);
});

test('webhook create, change and delete are audited with the actor: staff or API key', async (t) => {
  const app = await buildTestApp(t, { WEBHOOK_ALLOW_PRIVATE: 'true' });
  const admin = await createStaff(app, 'admin');
  const token = admin.token;
  const key = await call(app, 'POST', '/api-keys', { token, body: { name: 'CRM', scopes: ['webhooks:write'] } });
  const byStaff = await call(app, 'POST', '/webhooks', { token, body: { url: 'http://127.0.0.1:9/a', events: ['*'] } });
  const byKey = await call(app, 'POST', '/webhooks', {
    token: key.data.key,
    body: { url: 'http://127.0.0.1:9/b', events: ['guest.created'] },
  });
  assert.equal(byKey.status, 201);
  await call(app, 'PATCH', `/webhooks/${byKey.data.id}`, { token: key.data.key, body: { description: 'CRM' } });
  await call(app, 'DELETE', `/webhooks/${byStaff.data.id}`, { token });
  const log = await call(app, 'GET', '/audit-log?limit=100', { token });
  const entries = log.data
    .filter((e: { action: string }) => e.action.startsWith('webhook.'))
    .map((e: { action: string; actor: unknown; target: unknown }) => [e.action, e.actor, e.target])
    .reverse();
  const staffActor = { type: 'staff', id: admin.id };
  const keyActor = { type: 'api_key', id: key.data.id };
  assert.deepEqual(entries, [
    ['webhook.created', staffActor, { type: 'webhook', id: byStaff.data.id }],
    ['webhook.created', keyActor, { type: 'webhook', id: byKey.data.id }],
    ['webhook.updated', keyActor, { type: 'webhook', id: byKey.data.id }],
    ['webhook.deleted', staffActor, { type: 'webhook', id: byStaff.data.id }],
  ]);
  const filtered = await call(app, 'GET', '/audit-log?action=webhook.deleted', { token });
  assert.equal(filtered.status, 200);
  assert.equal(filtered.body.meta.total, 1);
});
