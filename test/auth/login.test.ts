// Login, the current user and password change (docs/decisions.md, Authentication): shapes, no enumeration, the
// per-IP+email attempt limit, and a password change that ends every earlier session.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { login } from '../fixtures.js';
import { buildTestApp, call, createStaff, PASSWORD } from '../helpers.js';

const NEW_PASSWORD = 'a brand new passphrase 42';

test('login returns token, expiresAt about 24 h ahead and the user, never a hash', async (t) => {
  const app = await buildTestApp(t);
  const user = await createStaff(app, 'manager', { name: 'Mina Manager', email: 'mina@hotel.test' });
  const before = Date.now();
  const res = await login(app, 'mina@hotel.test', PASSWORD);
  assert.equal(res.status, 200);
  assert.equal(res.body.success, true);
  assert.deepEqual(Object.keys(res.data).sort(), ['expiresAt', 'token', 'user']);
  assert.deepEqual(res.data.user, { id: user.id, name: 'Mina Manager', email: 'mina@hotel.test', role: 'manager' });
  assert.equal(typeof res.data.token, 'string');
  assert.match(res.data.expiresAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{3})?Z$/);
  const ahead = Date.parse(res.data.expiresAt) - before;
  assert.ok(ahead > 24 * 3600_000 - 5_000 && ahead <= 24 * 3600_000 + 5_000, `expires in ${ahead} ms`);
  assert.doesNotMatch(res.raw.body, /argon|password|hash/i);

  const me = await call(app, 'GET', '/auth/me', { token: res.data.token });
  assert.equal(me.status, 200);
  assert.deepEqual(Object.keys(me.data).sort(), [
    'active',
    'createdAt',
    'department',
    'email',
    'id',
    'name',
    'role',
    'updatedAt',
  ]);
  assert.equal(me.data.id, user.id);
  assert.equal(me.data.role, 'manager');
  assert.equal(me.data.active, true);
});

test('login compares e-mails case-insensitively', async (t) => {
  const app = await buildTestApp(t);
  const user = await createStaff(app, 'staff', { email: 'Mixed.Case@Hotel.Test' });
  for (const email of ['mixed.case@hotel.test', 'MIXED.CASE@HOTEL.TEST']) {
    const res = await login(app, email, PASSWORD);
    assert.equal(res.status, 200, email);
    assert.equal(res.data.user.id, user.id);
  }
});

test('a wrong password and an unknown e-mail give the same 401 INVALID_CREDENTIALS', async (t) => {
  const app = await buildTestApp(t);
  await createStaff(app, 'staff', { email: 'known@hotel.test' });
  const wrong = await login(app, 'known@hotel.test', 'not the password at all');
  const unknown = await login(app, 'nobody@hotel.test', 'not the password at all');
  assert.equal(wrong.status, 401);
  assert.equal(unknown.status, 401);
  assert.equal(wrong.body.error.code, 'INVALID_CREDENTIALS');
  assert.deepEqual(wrong.body, unknown.body);
  assert.equal(wrong.headers['www-authenticate'], unknown.headers['www-authenticate']);
});

test('login validates its body', async (t) => {
  const app = await buildTestApp(t);
  const missing = await call(app, 'POST', '/auth/login', { body: { email: 'a@hotel.test' } });
  assert.equal(missing.status, 400);
  assert.equal(missing.body.error.code, 'VALIDATION_ERROR');
  assert.ok(missing.body.error.details.some((d: { field: string }) => d.field === 'password'));
  const extra = await call(app, 'POST', '/auth/login', {
    body: { email: 'a@hotel.test', password: 'x', role: 'admin' },
  });
  assert.equal(extra.status, 400);
  assert.ok(extra.body.error.details.some((d: { field: string }) => d.field === 'role'));
});

test('the 11th login attempt in a minute for one IP and e-mail is 429 with Retry-After', async (t) => {
  const app = await buildTestApp(t);
  await createStaff(app, 'staff', { email: 'target@hotel.test' });
  await createStaff(app, 'staff', { email: 'bystander@hotel.test' });
  for (let i = 1; i <= 10; i++) {
    const res = await login(app, i % 2 ? 'target@hotel.test' : 'TARGET@hotel.test', 'wrong password guess');
    assert.equal(res.status, 401, `attempt ${i}`);
  }
  const blocked = await login(app, 'target@hotel.test', PASSWORD);
  assert.equal(blocked.status, 429);
  assert.equal(blocked.body.error.code, 'RATE_LIMITED');
  const retry = Number(blocked.headers['retry-after']);
  assert.ok(Number.isInteger(retry) && retry >= 1 && retry <= 60, `Retry-After ${retry}`);
  // Another e-mail from the same IP has its own budget.
  assert.equal((await login(app, 'bystander@hotel.test', PASSWORD)).status, 200);
});

test('a deactivated member cannot log in', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const user = await createStaff(app, 'staff', { email: 'leaver@hotel.test' });
  assert.equal((await login(app, 'leaver@hotel.test', PASSWORD)).status, 200);
  await call(app, 'PATCH', `/staff/${user.id}`, { token: admin.token, body: { active: false } });
  const res = await login(app, 'leaver@hotel.test', PASSWORD);
  assert.equal(res.status, 401);
  assert.equal(res.body.success, false);
  assert.equal(res.data, undefined);
});

test('password change: wrong current password and a short new one are 400 on their fields', async (t) => {
  const app = await buildTestApp(t);
  const user = await createStaff(app, 'staff');
  const wrong = await call(app, 'POST', '/auth/password', {
    token: user.token,
    body: { currentPassword: 'not my password', newPassword: NEW_PASSWORD },
  });
  assert.equal(wrong.status, 400);
  assert.equal(wrong.body.error.code, 'VALIDATION_ERROR');
  assert.deepEqual(
    wrong.body.error.details.map((d: { field: string }) => d.field),
    ['currentPassword'],
  );
  const short = await call(app, 'POST', '/auth/password', {
    token: user.token,
    body: { currentPassword: PASSWORD, newPassword: 'short' },
  });
  assert.equal(short.status, 400);
  assert.ok(short.body.error.details.some((d: { field: string }) => d.field === 'newPassword'));
  // Neither changed anything.
  assert.equal((await login(app, user.email, PASSWORD)).status, 200);
});

test('password change returns a new session and ends every earlier token at once', async (t) => {
  const app = await buildTestApp(t);
  const user = await createStaff(app, 'staff');
  const otherSession = app.ctx.tokens.sign(user.id, 'staff').token;
  const res = await call(app, 'POST', '/auth/password', {
    token: user.token,
    body: { currentPassword: PASSWORD, newPassword: NEW_PASSWORD },
  });
  assert.equal(res.status, 200);
  assert.equal(res.data.user.id, user.id);
  assert.doesNotMatch(res.raw.body, new RegExp(NEW_PASSWORD));

  // The token used for the change and one issued in the same second are both refused.
  for (const old of [user.token, otherSession]) {
    const gone = await call(app, 'GET', '/auth/me', { token: old });
    assert.equal(gone.status, 401);
    assert.equal(gone.body.error.code, 'TOKEN_INVALID');
  }
  assert.equal((await call(app, 'GET', '/auth/me', { token: res.data.token })).status, 200);

  assert.equal((await login(app, user.email, PASSWORD)).body.error?.code, 'INVALID_CREDENTIALS');
  const fresh = await login(app, user.email, NEW_PASSWORD);
  assert.equal(fresh.status, 200);
  // A login right after the change works, and so does refreshing its token.
  assert.equal((await call(app, 'GET', '/auth/me', { token: fresh.data.token })).status, 200);
  const refreshed = await call(app, 'POST', '/auth/refresh', { token: fresh.data.token });
  assert.equal(refreshed.status, 200);
  assert.equal((await call(app, 'GET', '/auth/me', { token: refreshed.data.token })).status, 200);
});
