// A token's staff row is kept between changes to the store (src/plugins/gate.ts): these tests use a
// token until it is surely kept, then end it (logout, deactivation, a role change, password
// change), through this instance or another one on the same store, and expect the very next
// request to see the change. On SQLite the rows are kept under the store's version; on PostgreSQL
// + Redis under the generation the instances share through Redis (one deployment, one
// REDIS_KEY_PREFIX), which these writes move.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { buildTestApp, call, createStaff, freshDatabaseUrl, PASSWORD, redisEnv } from '../helpers.js';

async function useWarm(app: FastifyInstance, token: string, expectedRole?: string) {
  for (let i = 0; i < 3; i++) {
    const me = await call(app, 'GET', '/auth/me', { token });
    assert.equal(me.status, 200, me.raw.body);
    if (expectedRole !== undefined) assert.equal(me.data.role, expectedRole);
  }
}

async function twoInstances(t: Parameters<typeof buildTestApp>[0]) {
  const env = { DATABASE_URL: await freshDatabaseUrl(t), RATE_LIMIT_STANDARD: '1000', ...redisEnv() };
  const a = await buildTestApp(t, env);
  const b = await buildTestApp(t, env);
  t.after(async () => {
    await b.close();
    await a.close();
  });
  return { a, b };
}

test('a logout by another instance refuses the token on the next request here', async (t) => {
  const { a, b } = await twoInstances(t);
  const user = await createStaff(a, 'staff');
  await useWarm(a, user.token);
  assert.equal((await call(b, 'POST', '/auth/logout', { token: user.token })).status, 200);
  const next = await call(a, 'GET', '/auth/me', { token: user.token });
  assert.equal(next.status, 401);
  assert.equal(next.body.error.code, 'TOKEN_INVALID');
});

test('a deactivation and a role change by another instance apply on the next request here', async (t) => {
  const { a, b } = await twoInstances(t);
  const admin = await createStaff(a, 'admin');
  const manager = await createStaff(a, 'manager');
  const staff = await createStaff(a, 'staff');

  // The manager may list staff until demoted; the role comes from the store, not the token.
  await useWarm(a, manager.token, 'manager');
  assert.equal((await call(a, 'GET', '/staff', { token: manager.token })).status, 200);
  const demoted = await call(b, 'PATCH', `/staff/${manager.id}`, { token: admin.token, body: { role: 'staff' } });
  assert.equal(demoted.status, 200, demoted.raw.body);
  assert.equal((await call(a, 'GET', '/auth/me', { token: manager.token })).data.role, 'staff');

  await useWarm(a, staff.token);
  const off = await call(b, 'PATCH', `/staff/${staff.id}`, { token: admin.token, body: { active: false } });
  assert.equal(off.status, 200, off.raw.body);
  const next = await call(a, 'GET', '/auth/me', { token: staff.token });
  assert.equal(next.status, 401);
  assert.equal(next.body.error.code, 'UNAUTHORIZED');
});

test('a logout and a password change here refuse the old tokens on the next request', async (t) => {
  const app = await buildTestApp(t, { RATE_LIMIT_STANDARD: '1000' });
  const user = await createStaff(app, 'staff');
  const second = app.ctx.tokens.sign(user.id, 'staff').token;
  await useWarm(app, user.token);
  await useWarm(app, second);
  assert.equal((await call(app, 'POST', '/auth/logout', { token: user.token })).status, 200);
  assert.equal((await call(app, 'GET', '/auth/me', { token: user.token })).status, 401);
  // The other session is still valid: only the logged-out token ended.
  await useWarm(app, second);
  const changed = await call(app, 'POST', '/auth/password', {
    token: second,
    body: { currentPassword: PASSWORD, newPassword: 'a completely new passphrase 2026' },
  });
  assert.equal(changed.status, 200, changed.raw.body);
  assert.equal((await call(app, 'GET', '/auth/me', { token: second })).status, 401);
  await useWarm(app, changed.data.token);
});
