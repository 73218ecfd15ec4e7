// Staff rules: who may list, read, create and change staff members, what a
// create accepts, and that the last active admin cannot be lost.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { toBool } from '../../src/db/store.js';
import { assertError, login } from '../fixtures.js';
import { buildTestApp, call, createStaff, type Res, type TestUser } from '../helpers.js';

const GOOD_PASSWORD = 'a long enough password';

const fields = (res: Res) => (res.body.error?.details ?? []).map((d: { field: string }) => d.field);

async function team(app: FastifyInstance) {
  return {
    admin: await createStaff(app, 'admin'),
    manager: await createStaff(app, 'manager'),
    staff: await createStaff(app, 'staff'),
    other: await createStaff(app, 'staff'),
  };
}

test('admin and manager list every member; staff see only themselves', async (t) => {
  const app = await buildTestApp(t);
  const { admin, manager, staff, other } = await team(app);
  const all = [admin.id, manager.id, staff.id, other.id].sort();
  for (const who of [admin, manager]) {
    const res = await call(app, 'GET', '/staff', { token: who.token });
    assert.equal(res.status, 200);
    assert.deepEqual(res.data.map((s: { id: string }) => s.id).sort(), all);
    assert.deepEqual(res.body.meta, { page: 1, limit: 20, total: 4, pages: 1, nextCursor: null });
    assert.doesNotMatch(res.raw.body, /password|hash|argon/i);
  }
  const own = await call(app, 'GET', '/staff', { token: staff.token });
  assert.equal(own.status, 200);
  assert.deepEqual(
    own.data.map((s: { id: string }) => s.id),
    [staff.id],
  );
  assert.equal(own.body.meta.total, 1);
});

test('get: admin and manager read anyone; staff read themselves, 403 on another, 404 on a missing id', async (t) => {
  const app = await buildTestApp(t);
  const { admin, manager, staff, other } = await team(app);
  for (const who of [admin, manager]) {
    const res = await call(app, 'GET', `/staff/${other.id}`, { token: who.token });
    assert.equal(res.status, 200);
    assert.equal(res.data.id, other.id);
    assert.equal(res.data.email, other.email);
  }
  const self = await call(app, 'GET', `/staff/${staff.id}`, { token: staff.token });
  assert.equal(self.status, 200);
  assert.equal(self.data.id, staff.id);
  assertError(await call(app, 'GET', `/staff/${other.id}`, { token: staff.token }), 403, 'FORBIDDEN');
  assertError(
    await call(app, 'GET', '/staff/stf_01jd8x3k5q7w9e2r4t6y8u0i1o', { token: staff.token }),
    404,
    'NOT_FOUND',
  );
  assertError(
    await call(app, 'GET', '/staff/stf_01jd8x3k5q7w9e2r4t6y8u0i1o', { token: admin.token }),
    404,
    'NOT_FOUND',
  );
});

test('only an admin may create staff', async (t) => {
  const app = await buildTestApp(t);
  const { manager, staff } = await team(app);
  for (const who of [manager, staff]) {
    const res = await call(app, 'POST', '/staff', {
      token: who.token,
      body: { name: 'Nope', email: `nope-${who.role}@hotel.test`, role: 'staff' },
    });
    assertError(res, 403, 'FORBIDDEN');
  }
  const admin = await createStaff(app, 'admin');
  const list = await call(app, 'GET', '/staff', { token: admin.token });
  assert.ok(!list.data.some((s: { email: string }) => s.email.startsWith('nope-')));
});

test('create with a password: 201, the member can log in with it', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const res = await call(app, 'POST', '/staff', {
    token: admin.token,
    body: {
      name: 'Hana Housekeeper',
      email: 'hana@hotel.test',
      role: 'staff',
      department: 'housekeeping',
      password: GOOD_PASSWORD,
    },
  });
  assert.equal(res.status, 201);
  assert.match(res.data.id, /^stf_[0-9a-z]{26}$/);
  assert.equal(res.data.name, 'Hana Housekeeper');
  assert.equal(res.data.department, 'housekeeping');
  assert.equal(res.data.role, 'staff');
  assert.equal(res.data.active, true);
  assert.equal(res.data.temporaryPassword, undefined);
  assert.doesNotMatch(res.raw.body, /password|hash|argon/i);
  const session = await login(app, 'hana@hotel.test', GOOD_PASSWORD);
  assert.equal(session.status, 200);
  assert.equal(session.data.user.id, res.data.id);
});

test('create without a password returns a one-time temporaryPassword that logs in', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const res = await call(app, 'POST', '/staff', {
    token: admin.token,
    body: { name: 'Frank Frontdesk', email: 'frank@hotel.test', role: 'manager' },
  });
  assert.equal(res.status, 201);
  assert.equal(typeof res.data.temporaryPassword, 'string');
  assert.ok(res.data.temporaryPassword.length >= 12);
  assert.equal(res.data.department, null);
  const session = await login(app, 'frank@hotel.test', res.data.temporaryPassword);
  assert.equal(session.status, 200);
  assert.equal(session.data.user.role, 'manager');
  const again = await call(app, 'GET', `/staff/${res.data.id}`, { token: admin.token });
  assert.equal(again.data.temporaryPassword, undefined);
});

test('create: a duplicate e-mail in another case is 409 CONFLICT', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  await createStaff(app, 'staff', { email: 'dup@hotel.test' });
  const res = await call(app, 'POST', '/staff', {
    token: admin.token,
    body: { name: 'Dup', email: 'DUP@Hotel.Test', role: 'staff', password: GOOD_PASSWORD },
  });
  assertError(res, 409, 'CONFLICT');
});

test('create: unknown department, bad role, short password, unknown field, bad e-mail are 400 naming the field', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const base = { name: 'Valid Name', email: 'valid@hotel.test', role: 'staff' };
  const cases: [Record<string, unknown>, string][] = [
    [{ ...base, department: 'spa' }, 'department'],
    [{ ...base, role: 'owner' }, 'role'],
    [{ ...base, password: 'short' }, 'password'],
    [{ ...base, isAdmin: true }, 'isAdmin'],
    [{ ...base, email: 'not-an-email' }, 'email'],
    [{ ...base, name: '' }, 'name'],
    [{ name: 'No Email', role: 'staff' }, 'email'],
  ];
  for (const [body, field] of cases) {
    const res = await call(app, 'POST', '/staff', { token: admin.token, body });
    assertError(res, 400, 'VALIDATION_ERROR');
    assert.ok(fields(res).includes(field), `${field}: ${JSON.stringify(res.body)}`);
  }
  const list = await call(app, 'GET', '/staff', { token: admin.token });
  assert.equal(list.body.meta.total, 1, 'nothing was created');
});

test('a department added to the departments setting becomes valid for staff', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const body = { name: 'Sam Spa', email: 'sam@hotel.test', role: 'staff', department: 'spa', password: GOOD_PASSWORD };
  assert.equal((await call(app, 'POST', '/staff', { token: admin.token, body })).status, 400);
  const put = await call(app, 'PUT', '/settings/departments', {
    token: admin.token,
    body: { value: ['spa', 'housekeeping'] },
  });
  assert.equal(put.status, 200);
  assert.equal((await call(app, 'POST', '/staff', { token: admin.token, body })).status, 201);
});

test('PATCH /staff/:id is admin only and changes name, role, department and active', async (t) => {
  const app = await buildTestApp(t);
  const { admin, manager, staff, other } = await team(app);
  for (const who of [manager, staff]) {
    assertError(
      await call(app, 'PATCH', `/staff/${other.id}`, { token: who.token, body: { name: 'Hacked' } }),
      403,
      'FORBIDDEN',
    );
  }
  assertError(
    await call(app, 'PATCH', `/staff/${staff.id}`, { token: staff.token, body: { role: 'admin' } }),
    403,
    'FORBIDDEN',
  );

  const res = await call(app, 'PATCH', `/staff/${other.id}`, {
    token: admin.token,
    body: { name: 'Olga Other', role: 'manager', department: 'concierge' },
  });
  assert.equal(res.status, 200);
  assert.equal(res.data.name, 'Olga Other');
  assert.equal(res.data.role, 'manager');
  assert.equal(res.data.department, 'concierge');
  // The promotion applies to the member's existing token at once.
  assert.equal((await call(app, 'GET', '/staff', { token: other.token })).body.meta.total, 4);

  const cleared = await call(app, 'PATCH', `/staff/${other.id}`, { token: admin.token, body: { department: null } });
  assert.equal(cleared.data.department, null);
  const off = await call(app, 'PATCH', `/staff/${other.id}`, { token: admin.token, body: { active: false } });
  assert.equal(off.data.active, false);
  const gone = await call(app, 'GET', '/auth/me', { token: other.token });
  assertError(gone, 401, 'UNAUTHORIZED');
  const back = await call(app, 'PATCH', `/staff/${other.id}`, { token: admin.token, body: { active: true } });
  assert.equal(back.data.active, true);
  assert.equal((await call(app, 'GET', '/auth/me', { token: other.token })).status, 200);
});

test('PATCH validates: empty body, unknown field, "true" for a boolean, unknown department, missing id', async (t) => {
  const app = await buildTestApp(t);
  const { admin, staff } = await team(app);
  for (const [body, field] of [
    [{}, 'body'],
    [{ email: 'new@hotel.test' }, 'email'],
    [{ active: 'true' }, 'active'],
    [{ role: 'root' }, 'role'],
    [{ department: 'spa' }, 'department'],
  ] as const) {
    const res = await call(app, 'PATCH', `/staff/${staff.id}`, { token: admin.token, body });
    assertError(res, 400, 'VALIDATION_ERROR');
    assert.ok(fields(res).includes(field), `${field}: ${JSON.stringify(res.body)}`);
  }
  assertError(
    await call(app, 'PATCH', '/staff/stf_01jd8x3k5q7w9e2r4t6y8u0i1o', { token: admin.token, body: { name: 'X' } }),
    404,
    'NOT_FOUND',
  );
});

test('the last active admin can be neither deactivated nor demoted: 409', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const second = await createStaff(app, 'admin');
  // With two active admins one may go.
  const off = await call(app, 'PATCH', `/staff/${second.id}`, { token: admin.token, body: { active: false } });
  assert.equal(off.status, 200);
  for (const body of [{ active: false }, { role: 'manager' }, { role: 'staff', active: false }]) {
    assertError(await call(app, 'PATCH', `/staff/${admin.id}`, { token: admin.token, body }), 409, 'CONFLICT');
  }
  // A deactivated admin does not count: promoting nobody, demoting the inactive one is fine.
  assert.equal(
    (await call(app, 'PATCH', `/staff/${second.id}`, { token: admin.token, body: { role: 'manager' } })).status,
    200,
  );
  const me = await call(app, 'GET', '/auth/me', { token: admin.token });
  assert.equal(me.data.role, 'admin');
  assert.equal(me.data.active, true);
  // Once another admin is active, the first may step down.
  const third = await createStaff(app, 'admin');
  const down = await call(app, 'PATCH', `/staff/${admin.id}`, { token: third.token, body: { role: 'manager' } });
  assert.equal(down.status, 200);
  assert.equal(down.data.role, 'manager');
});

test('concurrent deactivations never leave the hotel without an active admin', async (t) => {
  const app = await buildTestApp(t);
  const admins: TestUser[] = [];
  for (let i = 0; i < 5; i++) admins.push(await createStaff(app, 'admin'));
  // Each admin deactivates the next one, all at once.
  const results = await Promise.all(
    admins.map((a, i) =>
      call(app, 'PATCH', `/staff/${admins[(i + 1) % admins.length]!.id}`, { token: a.token, body: { active: false } }),
    ),
  );
  for (const r of results) assert.ok([200, 401, 409].includes(r.status), `${r.status} ${JSON.stringify(r.body)}`);
  assert.ok(results.some((r) => r.status === 409 || r.status === 401));
  const active = await app.ctx.store.db
    .selectFrom('staff')
    .select('id')
    .where('role', '=', 'admin')
    .where('active', '=', toBool(true))
    .execute();
  assert.ok(active.length >= 1, 'at least one admin is still active');
});
