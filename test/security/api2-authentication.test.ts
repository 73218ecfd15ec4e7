// OWASP API2:2023 Broken Authentication. The JWT attack matrix (alg none, HS/RS confusion,
// tampered claims, unknown kid, missing claims, expiry, token in the query string, revocation on
// logout, refresh races, deactivation, secret rotation) is test/auth/jwt.test.ts; login shape,
// no enumeration and the 11th-attempt 429 are test/auth/login.test.ts. Here: what an attacker
// tries next against those defences.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { assertError, login } from '../fixtures.js';
import { buildTestApp, call, createStaff, PASSWORD } from '../helpers.js';

test('login throttling cannot be sidestepped by changing the e-mail case, and the right password is refused too', async (t) => {
  const app = await buildTestApp(t);
  const user = await createStaff(app, 'staff', { email: 'target@hotel.test' });
  const spellings = ['target@hotel.test', 'TARGET@hotel.test', 'Target@Hotel.Test', 'target@HOTEL.TEST'];
  for (let i = 0; i < 10; i++) {
    const res = await login(app, spellings[i % spellings.length]!, `wrong guess ${i}`);
    assertError(res, 401, 'INVALID_CREDENTIALS', `attempt ${i + 1}`);
  }
  const right = await login(app, 'TaRgEt@hotel.test', PASSWORD);
  assertError(right, 429, 'RATE_LIMITED', 'the 11th attempt, with the right password');
  assert.ok(Number(right.headers['retry-after']) >= 1);
  assert.equal(right.body.data, undefined, 'no token in a throttled answer');
  // Another member's login from the same client is not locked out by the attack.
  const other = await createStaff(app, 'staff', { email: 'bystander@hotel.test' });
  const ok = await login(app, other.email, PASSWORD);
  assert.equal(ok.status, 200);
  assert.ok(user.id);
});

test('refresh after logout is 401 TOKEN_INVALID, and so is every other use of the logged-out token', async (t) => {
  const app = await buildTestApp(t);
  const user = await createStaff(app, 'manager');
  const token = (await login(app, user.email, PASSWORD)).data.token as string;
  assert.equal((await call(app, 'POST', '/auth/logout', { token })).status, 200);
  assertError(await call(app, 'POST', '/auth/refresh', { token }), 401, 'TOKEN_INVALID', 'refresh');
  assertError(await call(app, 'POST', '/auth/logout', { token }), 401, 'TOKEN_INVALID', 'second logout');
  assertError(
    await call(app, 'POST', '/auth/password', {
      token,
      body: { currentPassword: PASSWORD, newPassword: 'a whole new passphrase' },
    }),
    401,
    'TOKEN_INVALID',
    'password change',
  );
  assertError(await call(app, 'GET', '/guests', { token }), 401, 'TOKEN_INVALID', 'a read');
  // The password was not changed by the refused request.
  assert.equal((await login(app, user.email, PASSWORD)).status, 200);
});

test('a refreshed token is spent: refreshing it again, or using it, is TOKEN_INVALID', async (t) => {
  const app = await buildTestApp(t);
  const user = await createStaff(app, 'staff');
  const first = await call(app, 'POST', '/auth/refresh', { token: user.token });
  assert.equal(first.status, 200);
  assertError(
    await call(app, 'POST', '/auth/refresh', { token: user.token }),
    401,
    'TOKEN_INVALID',
    'replayed refresh',
  );
  assertError(await call(app, 'GET', '/auth/me', { token: user.token }), 401, 'TOKEN_INVALID', 'old token');
  assert.equal((await call(app, 'GET', '/auth/me', { token: first.data.token })).status, 200);
});

test('credentials are never accepted outside the body: no basic auth, no token cookie, no query token', async (t) => {
  const app = await buildTestApp(t);
  const user = await createStaff(app, 'admin');
  const basic = Buffer.from(`${user.email}:${PASSWORD}`).toString('base64');
  assertError(
    await call(app, 'GET', '/auth/me', { headers: { authorization: `Basic ${basic}` } }),
    401,
    'TOKEN_INVALID',
    'basic',
  );
  assertError(await call(app, 'GET', '/auth/me', { headers: { cookie: `token=${user.token}` } }), 401, 'TOKEN_MISSING');
  assertError(await call(app, 'GET', `/auth/me?access_token=${user.token}`), 401, 'TOKEN_MISSING', 'query');
});

test('API keys: a forged, truncated, spliced or query-string key is 401, and a key never becomes a session', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const mk = async (scopes: string[]) =>
    (await call(app, 'POST', '/api-keys', { token: admin.token, body: { name: 'k', scopes } })).data as {
      id: string;
      key: string;
    };
  const a = await mk(['guests:read']);
  const b = await mk(['guests:read', 'staff:write']);
  const secretOf = (k: string) => k.slice(-43);
  const forged = [
    a.key.slice(0, -1),
    `${a.key}A`,
    a.key.toUpperCase(),
    `gma_${a.id}_${secretOf(b.key)}`, // a's id with b's secret: no widening by splicing
    `gma_${b.id}_${secretOf(a.key)}`,
    `gma_${a.id}_${'A'.repeat(43)}`,
    'gma_',
    `gma_${a.id}`,
  ];
  for (const key of forged) {
    assertError(await call(app, 'GET', '/guests', { token: key }), 401, 'TOKEN_INVALID', key);
  }
  assertError(await call(app, 'GET', `/guests?api_key=${a.key}`), 401, 'TOKEN_MISSING', 'query');
  assertError(
    await call(app, 'GET', '/guests', {
      headers: { authorization: `Basic ${Buffer.from(`x:${a.key}`).toString('base64')}` },
    }),
    401,
    'TOKEN_INVALID',
    'basic',
  );
  // A key cannot trade itself for a session or escalate through the key routes.
  for (const [method, url] of [
    ['POST', '/auth/refresh'],
    ['POST', '/auth/logout'],
    ['POST', '/api-keys'],
    ['POST', `/api-keys/${b.id}/rotate`],
    ['PATCH', `/api-keys/${a.id}`],
  ] as const) {
    const res = await call(app, method, url, { token: b.key, body: {} });
    assertError(res, 403, 'FORBIDDEN', `${method} ${url}`);
  }
  assert.equal((await call(app, 'GET', '/guests', { token: a.key })).status, 200, 'the real key still works');
});
