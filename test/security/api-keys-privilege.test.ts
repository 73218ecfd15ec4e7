// No API key reaches an admin's power (docs/decisions.md, Integration safety), tried as an attacker holding
// a key with every scope: it manages staff members of role `staff` only, never sets a password, never
// touches an admin or a manager, and none of the routes a session or an admin owns lets it in. Staff
// tokens keep the role rules of staff (test/modules/staff.test.ts).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { SCOPES } from '../../src/lib/auth.js';
import { assertError, login } from '../fixtures.js';
import { buildTestApp, call, createStaff } from '../helpers.js';

const STRONG = 'a long enough passphrase 2026';

async function allScopesKey(app: FastifyInstance, adminToken: string): Promise<string> {
  const res = await call(app, 'POST', '/api-keys', {
    token: adminToken,
    body: { name: 'attacker', scopes: [...SCOPES] },
  });
  assert.equal(res.status, 201, res.raw.body);
  return res.data.key as string;
}

const staffRows = async (app: FastifyInstance) =>
  (await app.ctx.store.db.selectFrom('staff').select(['id', 'role', 'active', 'name']).orderBy('id').execute()).map(
    (r) => `${r.id}:${r.role}:${Boolean(r.active)}:${r.name}`,
  );

test('a key with staff:write cannot create an admin or a manager, nor set a password (403, nothing made)', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const key = await allScopesKey(app, admin.token);
  const before = await staffRows(app);
  const cases: [Record<string, unknown>, RegExp][] = [
    [{ role: 'admin', password: STRONG }, /role staff only/],
    [{ role: 'admin' }, /role staff only/],
    [{ role: 'manager' }, /role staff only/],
    [{ role: 'staff', password: STRONG }, /password/],
  ];
  for (const [i, [extra, message]] of cases.entries()) {
    const email = `mallory${i}@hotel.test`;
    const res = await call(app, 'POST', '/staff', { token: key, body: { name: 'Mallory', email, ...extra } });
    assertError(res, 403, 'FORBIDDEN', JSON.stringify(extra));
    assert.match(res.body.error.message, message);
    assertError(await login(app, email, STRONG), 401, 'INVALID_CREDENTIALS', 'no account was made');
  }
  assert.deepEqual(await staffRows(app), before);
});

test('a member a key creates is staff with a temporary password, and its session cannot mint keys or read the audit log', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const key = await allScopesKey(app, admin.token);
  const made = await call(app, 'POST', '/staff', {
    token: key,
    body: { name: 'Night Porter', email: 'porter@hotel.test', role: 'staff' },
  });
  assert.equal(made.status, 201, made.raw.body);
  assert.equal(made.data.role, 'staff');
  assert.equal(typeof made.data.temporaryPassword, 'string');
  const session = await login(app, 'porter@hotel.test', made.data.temporaryPassword);
  assert.equal(session.status, 200);
  assert.equal(session.data.user.role, 'staff');
  const token = session.data.token as string;
  assertError(
    await call(app, 'POST', '/api-keys', { token, body: { name: 'x', scopes: ['staff:write'] } }),
    403,
    'FORBIDDEN',
  );
  assertError(await call(app, 'GET', '/audit-log', { token }), 403, 'FORBIDDEN');
  assertError(
    await call(app, 'PATCH', `/staff/${made.data.id}`, { token, body: { role: 'admin' } }),
    403,
    'FORBIDDEN',
    'nor promote itself',
  );
});

test('a key with staff:write cannot change, deactivate, demote or promote an admin or a manager', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const other = await createStaff(app, 'admin');
  const manager = await createStaff(app, 'manager');
  const member = await createStaff(app, 'staff');
  const key = await allScopesKey(app, admin.token);
  const before = await staffRows(app);
  for (const target of [admin, other, manager]) {
    for (const body of [{ active: false }, { role: 'staff' }, { name: 'Renamed' }, { department: 'housekeeping' }]) {
      const res = await call(app, 'PATCH', `/staff/${target.id}`, { token: key, body });
      assertError(res, 403, 'FORBIDDEN', `${target.role} ${JSON.stringify(body)}`);
      assert.match(res.body.error.message, /admin or a manager/);
    }
  }
  for (const role of ['admin', 'manager']) {
    const res = await call(app, 'PATCH', `/staff/${member.id}`, { token: key, body: { role } });
    assertError(res, 403, 'FORBIDDEN', `promote to ${role}`);
    assert.match(res.body.error.message, /admin or a manager/);
  }
  assert.deepEqual(await staffRows(app), before, 'nothing changed');
  // An admin's session still works after all of that.
  assert.equal((await call(app, 'GET', '/auth/me', { token: other.token })).status, 200);
});

test('a key with staff:write manages staff-role members: rename, move, deactivate and reactivate', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const member = await createStaff(app, 'staff');
  const key = await allScopesKey(app, admin.token);
  for (const body of [
    { name: 'Renamed Member', department: 'housekeeping' },
    { role: 'staff' },
    { active: false },
    { active: true },
  ]) {
    const res = await call(app, 'PATCH', `/staff/${member.id}`, { token: key, body });
    assert.equal(res.status, 200, `${JSON.stringify(body)} ${res.raw.body}`);
    assert.equal(res.data.role, 'staff');
  }
});

test('staff tokens keep their role rules: an admin creates an admin with a password; a manager cannot', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const manager = await createStaff(app, 'manager');
  const body = { name: 'Second Admin', email: 'second.admin@hotel.test', role: 'admin', password: STRONG };
  assertError(await call(app, 'POST', '/staff', { token: manager.token, body }), 403, 'FORBIDDEN');
  const made = await call(app, 'POST', '/staff', { token: admin.token, body });
  assert.equal(made.status, 201, made.raw.body);
  assert.equal((await login(app, body.email, STRONG)).data.user.role, 'admin');
  const demoted = await call(app, 'PATCH', `/staff/${made.data.id}`, { token: admin.token, body: { role: 'manager' } });
  assert.equal(demoted.status, 200);
});

test('no route an admin or a session owns lets a key with every scope in', async (t) => {
  // The routes a key could use to gain power beyond its scopes: minting or widening keys, the audit
  // log, and every session route (a key has no session, no password, nothing to refresh).
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const key = await allScopesKey(app, admin.token);
  const keyId = (await call(app, 'GET', '/api-keys', { token: admin.token })).data[0].id as string;
  const routes: [string, string, unknown?][] = [
    ['POST', '/api-keys', { name: 'wider', scopes: ['staff:write'] }],
    ['GET', '/api-keys'],
    ['GET', `/api-keys/${keyId}`],
    ['PATCH', `/api-keys/${keyId}`, { scopes: [...SCOPES] }],
    ['POST', `/api-keys/${keyId}/rotate`, { graceSeconds: 0 }],
    ['DELETE', `/api-keys/${keyId}`],
    ['GET', '/audit-log'],
    ['GET', '/auth/me'],
    ['POST', '/auth/refresh'],
    ['POST', '/auth/logout'],
    ['POST', '/auth/password', { currentPassword: 'x', newPassword: STRONG }],
  ];
  for (const [method, url, body] of routes) {
    assertError(await call(app, method as 'GET', url, { token: key, body }), 403, 'FORBIDDEN', `${method} ${url}`);
  }
  assert.equal((await call(app, 'GET', '/guests', { token: key })).status, 200, 'the key itself still works');
});
