// The bearer-token attack matrix (docs/decisions.md, Authentication): every forged, tampered, expired, revoked or
// misplaced token is refused with the right 401 code and challenge; rotation and demotion hold.
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { TokenService } from '../../src/lib/jwt.js';
import { buildTestApp, call, createStaff, JWT_SECRET, type Res } from '../helpers.js';

const OTHER_SECRET = 'another-secret-that-is-also-long-enough-xyz';

const enc = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
const dec = (seg: string) => JSON.parse(Buffer.from(seg, 'base64url').toString('utf8')) as Record<string, unknown>;

/** Header and claims of a real token, to forge variants from. */
function parts(token: string) {
  const [h, p, s] = token.split('.') as [string, string, string];
  return { header: dec(h), claims: dec(p), h, p, s };
}

/** A token with any header and claims, HMAC-signed with `secret` (`sha256` unless told). */
function forge(header: object, claims: object, secret = JWT_SECRET, hash = 'sha256'): string {
  const h = enc(header);
  const p = enc(claims);
  return `${h}.${p}.${createHmac(hash, secret).update(`${h}.${p}`).digest('base64url')}`;
}

const me = (app: FastifyInstance, authorization?: string, url = '/auth/me') =>
  call(app, 'GET', url, authorization === undefined ? {} : { headers: { authorization } });

function assert401(res: Res, code: string, tokenSent = true) {
  assert.equal(res.status, 401, JSON.stringify(res.body));
  assert.equal(res.body.success, false);
  assert.equal(res.body.error.code, code);
  const challenge = String(res.headers['www-authenticate'] ?? '');
  assert.match(challenge, /^Bearer realm="[^"]+"/);
  if (tokenSent) assert.match(challenge, /error="invalid_token"/);
  else assert.doesNotMatch(challenge, /error=/);
}

test('a forged token with our secret, kid and every claim is accepted (the control for the matrix)', async (t) => {
  const app = await buildTestApp(t);
  const user = await createStaff(app, 'staff');
  const { header, claims } = parts(user.token);
  const res = await me(app, `Bearer ${forge(header, claims)}`);
  assert.equal(res.status, 200);
  assert.equal(res.data.id, user.id);
});

test('no Authorization header is 401 TOKEN_MISSING with a bare Bearer challenge', async (t) => {
  const app = await buildTestApp(t);
  assert401(await me(app), 'TOKEN_MISSING', false);
  assert401(await me(app, ''), 'TOKEN_MISSING', false);
});

test('a header that is not "Bearer <jwt>" is TOKEN_INVALID', async (t) => {
  const app = await buildTestApp(t);
  const user = await createStaff(app, 'staff');
  for (const header of [
    'Basic dXNlcjpwYXNz',
    'Bearer',
    'Bearer junk',
    'Bearer a.b.c',
    `Token ${user.token}`,
    `Bearer ${user.token} extra`,
  ]) {
    assert401(await me(app, header), 'TOKEN_INVALID');
  }
});

test('alg "none" with an empty signature is TOKEN_INVALID', async (t) => {
  const app = await buildTestApp(t);
  const user = await createStaff(app, 'admin');
  const { header, claims } = parts(user.token);
  for (const alg of ['none', 'None', 'NONE']) {
    assert401(await me(app, `Bearer ${enc({ ...header, alg })}.${enc(claims)}.`), 'TOKEN_INVALID');
  }
  assert401(await me(app, `Bearer ${enc({ alg: 'none' })}.${enc(claims)}.`), 'TOKEN_INVALID');
});

test('an HS512 token signed with our own secret is TOKEN_INVALID (algorithm pinned)', async (t) => {
  const app = await buildTestApp(t);
  const user = await createStaff(app, 'staff');
  const { header, claims } = parts(user.token);
  assert401(
    await me(app, `Bearer ${forge({ ...header, alg: 'HS512' }, claims, JWT_SECRET, 'sha512')}`),
    'TOKEN_INVALID',
  );
  assert401(
    await me(app, `Bearer ${forge({ ...header, alg: 'HS384' }, claims, JWT_SECRET, 'sha384')}`),
    'TOKEN_INVALID',
  );
});

test('an RS256 header (RS/HS key confusion) is TOKEN_INVALID', async (t) => {
  const app = await buildTestApp(t);
  const user = await createStaff(app, 'staff');
  const { header, claims } = parts(user.token);
  assert401(await me(app, `Bearer ${forge({ ...header, alg: 'RS256' }, claims)}`), 'TOKEN_INVALID');
  assert401(await me(app, `Bearer ${forge({ ...header, alg: 'ES256' }, claims)}`), 'TOKEN_INVALID');
});

test('a tampered role claim with the original signature is TOKEN_INVALID', async (t) => {
  const app = await buildTestApp(t);
  const user = await createStaff(app, 'staff');
  const { h, claims, s } = parts(user.token);
  const tampered = `${h}.${enc({ ...claims, role: 'admin' })}.${s}`;
  assert401(await call(app, 'GET', '/settings', { token: tampered }), 'TOKEN_INVALID');
  assert401(await me(app, `Bearer ${tampered}`), 'TOKEN_INVALID');
});

test('a signature that differs only in unused base64url bits is TOKEN_INVALID (no malleable tokens)', async (t) => {
  const app = await buildTestApp(t);
  const user = await createStaff(app, 'staff');
  const { h, p, s } = parts(user.token);
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
  const last = alphabet.indexOf(s.at(-1)!);
  const twin = `${s.slice(0, -1)}${alphabet[last ^ 1]}`;
  assert.deepEqual(Buffer.from(twin, 'base64url'), Buffer.from(s, 'base64url'), 'the twin decodes to the same bytes');
  assert401(await me(app, `Bearer ${h}.${p}.${twin}`), 'TOKEN_INVALID');
  assert.equal((await me(app, `Bearer ${user.token}`)).status, 200);
});

test('a token signed with another secret is TOKEN_INVALID, whatever kid it names', async (t) => {
  const app = await buildTestApp(t);
  const user = await createStaff(app, 'staff');
  const { header, claims } = parts(user.token);
  assert401(await me(app, `Bearer ${forge(header, claims, OTHER_SECRET)}`), 'TOKEN_INVALID');
  const foreign = new TokenService(OTHER_SECRET, [], 3600).sign(user.id, 'admin').token;
  assert401(await me(app, `Bearer ${foreign}`), 'TOKEN_INVALID');
});

test('a token missing exp, sub or jti is TOKEN_INVALID even when correctly signed', async (t) => {
  const app = await buildTestApp(t);
  const user = await createStaff(app, 'staff');
  const { header, claims } = parts(user.token);
  for (const missing of ['exp', 'sub', 'jti']) {
    const { [missing]: _gone, ...rest } = claims;
    assert401(await me(app, `Bearer ${forge(header, rest)}`), 'TOKEN_INVALID');
  }
  assert401(await me(app, `Bearer ${forge(header, { ...claims, exp: String(claims.exp) })}`), 'TOKEN_INVALID');
  assert401(await me(app, `Bearer ${forge(header, { ...claims, sub: 'stf_nobody' })}`), 'TOKEN_INVALID');
});

test('an unknown or missing kid is TOKEN_INVALID', async (t) => {
  const app = await buildTestApp(t);
  const user = await createStaff(app, 'staff');
  const { header, claims } = parts(user.token);
  assert401(await me(app, `Bearer ${forge({ ...header, kid: '0000000000000000' }, claims)}`), 'TOKEN_INVALID');
  const { kid: _kid, ...noKid } = header;
  assert401(await me(app, `Bearer ${forge(noKid, claims)}`), 'TOKEN_INVALID');
});

test('an expired token is TOKEN_EXPIRED with an invalid_token challenge', async (t) => {
  const app = await buildTestApp(t);
  const user = await createStaff(app, 'staff');
  const { token } = app.ctx.tokens.sign(user.id, 'staff', Date.now() - 2 * 86400_000);
  const res = await me(app, `Bearer ${token}`);
  assert401(res, 'TOKEN_EXPIRED');
  assert.match(res.body.error.message, /log in again/i);
});

test('a token accepted before is TOKEN_EXPIRED once its exp passes (verified tokens are remembered)', async (t) => {
  const app = await buildTestApp(t);
  const user = await createStaff(app, 'staff');
  const ttlMs = app.ctx.config.tokenTtlSeconds * 1000;
  // Expires about 5 s from now: the two requests below must both come before that on a busy machine.
  const { token, claims } = app.ctx.tokens.sign(user.id, 'staff', Date.now() - ttlMs + 5000);
  assert.equal((await me(app, `Bearer ${token}`)).status, 200);
  assert.equal((await me(app, `Bearer ${token}`)).status, 200);
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, claims.exp * 1000 - Date.now()) + 50));
  assert401(await me(app, `Bearer ${token}`), 'TOKEN_EXPIRED');
  // A tampered copy of a remembered token is still checked in full.
  const [h, b, sig] = user.token.split('.') as [string, string, string];
  assert.equal((await me(app, `Bearer ${user.token}`)).status, 200);
  const flipped = `${h}.${b}.${sig.slice(0, -2)}${sig.at(-2) === 'A' ? 'B' : 'A'}${sig.at(-1)}`;
  assert401(await me(app, `Bearer ${flipped}`), 'TOKEN_INVALID');
});

test('a token in the query string is never read: TOKEN_MISSING', async (t) => {
  const app = await buildTestApp(t);
  const user = await createStaff(app, 'admin');
  for (const q of ['access_token', 'token']) {
    assert401(await me(app, undefined, `/auth/me?${q}=${user.token}`), 'TOKEN_MISSING', false);
    assert401(await me(app, undefined, `/staff?${q}=${user.token}`), 'TOKEN_MISSING', false);
  }
});

test('after logout the token is TOKEN_INVALID', async (t) => {
  const app = await buildTestApp(t);
  const user = await createStaff(app, 'staff');
  const out = await call(app, 'POST', '/auth/logout', { token: user.token });
  assert.equal(out.status, 200);
  assert.deepEqual(out.data, { loggedOut: true });
  assert401(await me(app, `Bearer ${user.token}`), 'TOKEN_INVALID');
  assert401(await call(app, 'POST', '/auth/logout', { token: user.token }), 'TOKEN_INVALID');
});

test('refresh revokes the old token and returns a working new one', async (t) => {
  const app = await buildTestApp(t);
  const user = await createStaff(app, 'manager');
  const res = await call(app, 'POST', '/auth/refresh', { token: user.token });
  assert.equal(res.status, 200);
  assert.notEqual(res.data.token, user.token);
  assert.equal(res.data.user.id, user.id);
  assert.equal(res.data.user.role, 'manager');
  assert.ok(Date.parse(res.data.expiresAt) > Date.now() + 23 * 3600_000);
  assert401(await me(app, `Bearer ${user.token}`), 'TOKEN_INVALID');
  const now = await me(app, `Bearer ${res.data.token}`);
  assert.equal(now.status, 200);
  assert.equal(now.data.id, user.id);
});

test('two refreshes of one token racing each other: exactly one succeeds', async (t) => {
  const app = await buildTestApp(t);
  const user = await createStaff(app, 'staff');
  const results = await Promise.all([1, 2, 3].map(() => call(app, 'POST', '/auth/refresh', { token: user.token })));
  const won = results.filter((r) => r.status === 200);
  assert.equal(won.length, 1, results.map((r) => r.status).join(','));
  for (const r of results.filter((x) => x.status !== 200)) assert401(r, 'TOKEN_INVALID');
  assert.equal((await me(app, `Bearer ${won[0]!.data.token}`)).status, 200);
});

test('refresh with an expired token is TOKEN_EXPIRED', async (t) => {
  const app = await buildTestApp(t);
  const user = await createStaff(app, 'staff');
  const { token } = app.ctx.tokens.sign(user.id, 'staff', Date.now() - 25 * 3600_000);
  assert401(await call(app, 'POST', '/auth/refresh', { token }), 'TOKEN_EXPIRED');
});

test("a deactivated member's valid token is 401 UNAUTHORIZED", async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const user = await createStaff(app, 'staff');
  assert.equal((await me(app, `Bearer ${user.token}`)).status, 200);
  const off = await call(app, 'PATCH', `/staff/${user.id}`, { token: admin.token, body: { active: false } });
  assert.equal(off.status, 200);
  assert401(await me(app, `Bearer ${user.token}`), 'UNAUTHORIZED');
});

test('JWT_SECRET_PREVIOUS still verifies old tokens; new tokens carry the new kid', async (t) => {
  const NEW_SECRET = 'the-new-secret-after-rotation-0123456789abcdef';
  const app = await buildTestApp(t, { JWT_SECRET: NEW_SECRET, JWT_SECRET_PREVIOUS: JWT_SECRET });
  const user = await createStaff(app, 'staff');
  const oldToken = new TokenService(JWT_SECRET, [], 3600).sign(user.id, 'staff').token;
  const res = await me(app, `Bearer ${oldToken}`);
  assert.equal(res.status, 200);
  assert.equal(res.data.id, user.id);

  const refreshed = await call(app, 'POST', '/auth/refresh', { token: oldToken });
  assert.equal(refreshed.status, 200);
  const oldKid = parts(oldToken).header.kid;
  const newKid = parts(refreshed.data.token).header.kid;
  assert.equal(typeof newKid, 'string');
  assert.notEqual(newKid, oldKid);
  assert.equal(parts(user.token).header.kid, newKid);
  assert.equal((await me(app, `Bearer ${refreshed.data.token}`)).status, 200);

  // The same old token on an app that no longer lists the old secret is refused.
  const rotatedOut = await buildTestApp(t, { JWT_SECRET: NEW_SECRET });
  const other = await createStaff(rotatedOut, 'staff');
  const stale = new TokenService(JWT_SECRET, [], 3600).sign(other.id, 'staff').token;
  assert401(await me(rotatedOut, `Bearer ${stale}`), 'TOKEN_INVALID');
});

test('a demoted admin is treated as staff at once, though the token claims admin', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const other = await createStaff(app, 'admin');
  assert.equal((await call(app, 'GET', '/settings', { token: admin.token })).status, 200);
  const demoted = await call(app, 'PATCH', `/staff/${admin.id}`, { token: other.token, body: { role: 'staff' } });
  assert.equal(demoted.status, 200, demoted.raw.body);
  assert.equal(parts(admin.token).claims.role, 'admin');
  const settings = await call(app, 'GET', '/settings', { token: admin.token });
  assert.equal(settings.status, 403);
  assert.equal(settings.body.error.code, 'FORBIDDEN');
  const list = await call(app, 'GET', '/staff', { token: admin.token });
  assert.equal(list.status, 200);
  assert.deepEqual(
    list.data.map((s: { id: string }) => s.id),
    [admin.id],
  );
  assert.equal((await me(app, `Bearer ${admin.token}`)).data.role, 'staff');
});

test('a token signed by a key the server no longer has says so: log in again', async (t) => {
  const app = await buildTestApp(t);
  const user = await createStaff(app, 'staff');
  const stale = new TokenService('a-secret-this-server-never-had-0123456789', [], 3600).sign(user.id, 'staff').token;
  const res = await me(app, `Bearer ${stale}`);
  assert401(res, 'TOKEN_INVALID');
  assert.match(res.body.error.message, /signed by a key this server no longer has: log in again/);
});
