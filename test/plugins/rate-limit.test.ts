// Rate limits (docs/decisions.md, Rate limits): headers on every response, 429 past the limit, buckets
// per staff member or per IP, the limit from the environment, and one budget across instances.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { buildTestApp, call, createStaff, type Res, redisEnv, TEST_STORE } from '../helpers.js';

function assertLimitHeaders(res: Res, limit: number, remaining?: number) {
  const nowSec = Date.now() / 1000;
  assert.equal(res.headers['x-ratelimit-limit'], String(limit), `limit on ${res.status}`);
  const left = Number(res.headers['x-ratelimit-remaining']);
  assert.ok(Number.isInteger(left) && left >= 0 && left <= limit, `remaining ${left}`);
  if (remaining !== undefined) assert.equal(left, remaining, `remaining on ${res.status}`);
  const reset = res.headers['x-ratelimit-reset'];
  assert.match(String(reset), /^\d+$/, 'reset is whole seconds');
  // A Unix time within the window, not "seconds from now".
  assert.ok(Number(reset) >= Math.floor(nowSec) && Number(reset) <= Math.ceil(nowSec) + 61, `reset ${reset}`);
}

/** An unauthenticated request from a given client address. */
const fromIp = (app: FastifyInstance, ip: string, headers: Record<string, string> = {}) =>
  app.inject({ method: 'GET', url: '/api/v1/auth/me', remoteAddress: ip, headers });

test('X-RateLimit-* on success, 401, 404 and 400 responses; Reset is a Unix time in seconds', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const ok = await call(app, 'GET', '/auth/me', { token: admin.token });
  assert.equal(ok.status, 200);
  assertLimitHeaders(ok, 100, 99);
  const bad = await call(app, 'GET', '/staff?limit=abc', { token: admin.token });
  assert.equal(bad.status, 400);
  assertLimitHeaders(bad, 100, 98);
  const missing = await call(app, 'GET', '/staff/stf_01jd8x3k5q7w9e2r4t6y8u0i1o', { token: admin.token });
  assert.equal(missing.status, 404);
  assertLimitHeaders(missing, 100, 97);
  const forbidden = await call(app, 'PUT', '/settings/hotel', {
    token: (await createStaff(app, 'staff')).token,
    body: { value: 1 },
  });
  assert.equal(forbidden.status, 403);
  assertLimitHeaders(forbidden, 100, 99);

  // Unauthenticated: the IP bucket.
  const anon401 = await call(app, 'GET', '/auth/me');
  assert.equal(anon401.status, 401);
  assertLimitHeaders(anon401, 100, 99);
  const anon404 = await call(app, 'GET', '/no-such-route');
  assert.equal(anon404.status, 404);
  assertLimitHeaders(anon404, 100, 98);
  const anon400 = await call(app, 'POST', '/auth/login', { body: { email: 1 } });
  assert.equal(anon400.status, 400);
  assertLimitHeaders(anon400, 100, 97);
  const anon405 = await call(app, 'DELETE', '/auth/me');
  assert.equal(anon405.status, 405);
  assertLimitHeaders(anon405, 100, 96);
});

test('the 101st request in the window is 429 RATE_LIMITED with Retry-After', async (t) => {
  const app = await buildTestApp(t);
  const user = await createStaff(app, 'staff');
  for (let i = 1; i <= 100; i++) {
    const res = await call(app, 'GET', '/auth/me', { token: user.token });
    assert.equal(res.status, 200, `request ${i}`);
    assert.equal(res.headers['x-ratelimit-remaining'], String(100 - i));
  }
  const limited = await call(app, 'GET', '/auth/me', { token: user.token });
  assert.equal(limited.status, 429);
  assert.equal(limited.body.success, false);
  assert.equal(limited.body.error.code, 'RATE_LIMITED');
  assertLimitHeaders(limited, 100, 0);
  const retry = Number(limited.headers['retry-after']);
  assert.ok(Number.isInteger(retry) && retry >= 1 && retry <= 60, `Retry-After ${retry}`);
  assert.ok(Number(limited.headers['x-ratelimit-reset']) - Date.now() / 1000 <= retry + 1);
  // Still limited, on any route.
  assert.equal((await call(app, 'GET', '/staff', { token: user.token })).status, 429);
});

test('authenticated buckets are per staff member: two members each get 100', async (t) => {
  const app = await buildTestApp(t, { RATE_LIMIT_STANDARD: '20' });
  const a = await createStaff(app, 'staff');
  const b = await createStaff(app, 'staff');
  for (let i = 0; i < 20; i++) assert.equal((await call(app, 'GET', '/auth/me', { token: a.token })).status, 200);
  assert.equal((await call(app, 'GET', '/auth/me', { token: a.token })).status, 429);
  const other = await call(app, 'GET', '/auth/me', { token: b.token });
  assert.equal(other.status, 200);
  assertLimitHeaders(other, 20, 19);
  // The anonymous IP bucket (same address) is separate as well.
  const anon = await call(app, 'GET', '/auth/me');
  assert.equal(anon.status, 401);
  assertLimitHeaders(anon, 20, 19);
});

test('a member gets the full default budget of 100 no matter how much another used', async (t) => {
  const app = await buildTestApp(t);
  const a = await createStaff(app, 'manager');
  const b = await createStaff(app, 'manager');
  for (let i = 0; i < 100; i++) await call(app, 'GET', '/auth/me', { token: a.token });
  assert.equal((await call(app, 'GET', '/auth/me', { token: a.token })).status, 429);
  for (let i = 0; i < 100; i++) {
    assert.equal((await call(app, 'GET', '/auth/me', { token: b.token })).status, 200, `b request ${i + 1}`);
  }
  assert.equal((await call(app, 'GET', '/auth/me', { token: b.token })).status, 429);
});

test('unauthenticated buckets are per IP, and X-Forwarded-For is not trusted by default', async (t) => {
  const app = await buildTestApp(t, { RATE_LIMIT_STANDARD: '10' });
  for (let i = 0; i < 10; i++) {
    const res = await fromIp(app, '10.0.0.1', { 'x-forwarded-for': `192.0.2.${i}` });
    assert.equal(res.statusCode, 401);
  }
  const limited = await fromIp(app, '10.0.0.1', { 'x-forwarded-for': '198.51.100.7' });
  assert.equal(limited.statusCode, 429);
  assert.equal(JSON.parse(limited.body).error.code, 'RATE_LIMITED');
  const other = await fromIp(app, '10.0.0.2');
  assert.equal(other.statusCode, 401);
  assert.equal(other.headers['x-ratelimit-remaining'], '9');
});

test('RATE_LIMIT_STANDARD lowers the limit', async (t) => {
  const app = await buildTestApp(t, { RATE_LIMIT_STANDARD: '3' });
  const user = await createStaff(app, 'staff');
  for (let i = 0; i < 3; i++) {
    const res = await call(app, 'GET', '/auth/me', { token: user.token });
    assert.equal(res.status, 200);
    assertLimitHeaders(res, 3, 2 - i);
  }
  const limited = await call(app, 'GET', '/auth/me', { token: user.token });
  assert.equal(limited.status, 429);
  assert.equal(limited.headers['x-ratelimit-limit'], '3');
});

test('two instances on one Redis share one budget', {
  skip: TEST_STORE === 'sqlite' ? 'needs Redis: runs with TEST_STORE=postgres (SQLite runs count in process)' : false,
}, async (t) => {
  const prefix = `gma-test:shared:${randomBytes(6).toString('hex')}:`;
  const env = { REDIS_KEY_PREFIX: prefix, RATE_LIMIT_STANDARD: '10' };
  const one = await buildTestApp(t, env);
  const two = await buildTestApp(t, env);
  // Unauthenticated requests from one address share the IP bucket across both instances.
  for (let i = 0; i < 6; i++) assert.equal((await fromIp(one, '10.9.9.9')).statusCode, 401);
  const fromTwo = await fromIp(two, '10.9.9.9');
  assert.equal(fromTwo.statusCode, 401);
  assert.equal(fromTwo.headers['x-ratelimit-remaining'], '3');
  for (let i = 0; i < 3; i++) assert.equal((await fromIp(two, '10.9.9.9')).statusCode, 401);
  assert.equal((await fromIp(one, '10.9.9.9')).statusCode, 429);
  assert.equal((await fromIp(two, '10.9.9.9')).statusCode, 429);
  // An instance on another prefix keeps its own budget.
  const elsewhere = await buildTestApp(t, { RATE_LIMIT_STANDARD: '10' });
  assert.equal((await fromIp(elsewhere, '10.9.9.9')).headers['x-ratelimit-remaining'], '9');
});

test("a revoked token is counted by its address, never in its former owner's budget", async (t) => {
  const app = await buildTestApp(t, { RATE_LIMIT_STANDARD: '10', ...redisEnv() });
  const member = await createStaff(app, 'staff');
  const other = app.ctx.tokens.sign(member.id, member.role).token;
  const out = await call(app, 'POST', '/auth/logout', { token: member.token });
  assert.equal(out.status, 200, out.raw.body);
  // On PostgreSQL + Redis a staff token is counted before its row is read (src/plugins/gate.ts):
  // the logged-out token's hits must be taken back from the member and counted by address.
  for (let i = 0; i < 6; i++) {
    const res = await call(app, 'GET', '/auth/me', { token: member.token });
    assert.equal(res.status, 401, res.raw.body);
    assert.equal(res.body.error.code, 'TOKEN_INVALID');
    assertLimitHeaders(res, 10, 9 - i);
  }
  // The member's budget holds the logout and this request only.
  const mine = await call(app, 'GET', '/auth/me', { token: other });
  assert.equal(mine.status, 200, mine.raw.body);
  assertLimitHeaders(mine, 10, 8);
});
