// Lost access ends an open event stream (docs/decisions.md, Connections), over real HTTP: a stream closes within 5 s
// of its key being revoked, narrowed or rotated away, its token logged out, refreshed or outdated by
// a password change, or its staff member deactivated or given another role, also when the change is
// made on another instance; a key's stream lives at most the key stream cap (24 h), a token's until
// the token expires; and nobody else's stream is touched.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import type { BuildOptions } from '../../src/app.js';
import { buildTestApp, call, createStaff, freshDatabaseUrl, freshPostgres, PASSWORD, TEST_STORE } from '../helpers.js';
import { listen, openStream, type Stream } from './stream-helpers.js';

/** The guarantee: a stream of a caller who lost access is closed within this long of the change. */
const WITHIN_MS = 5_000;
/** Checks every 400 ms: most tests here show who is cut off, not the default's timing. */
const FAST: BuildOptions = { eventStreams: { accessCheckMs: 400 } };

async function makeKey(app: FastifyInstance, token: string, scopes: string[] = ['events:read']) {
  const res = await call(app, 'POST', '/api-keys', { token, body: { name: 'Dashboard', scopes } });
  assert.equal(res.status, 201, res.raw.body);
  return res.data as { id: string; key: string };
}

/** Opens a stream and checks it started. */
async function opened(url: string, credential: string): Promise<Stream> {
  const s = await openStream(url, credential);
  assert.equal(s.status, 200, s.body);
  return s;
}

/** Waits for the server to end `s` cleanly, at most WITHIN_MS after `since`. */
async function closesWithin(s: Stream, since: number) {
  const timer = sleep(since + WITHIN_MS - Date.now()).then(() => 'open' as const);
  const outcome = await Promise.race([s.ended.then(() => 'ended' as const), timer]);
  assert.equal(outcome, 'ended', `the stream was still open ${WITHIN_MS} ms after the change: ${s.body}`);
  assert.ok(s.complete, 'the server ended the response (its last chunk came), not a broken connection');
}

/** A reconnect with the same credential, as an EventSource would make, is refused with `status`. */
async function reconnectRefused(url: string, credential: string, status: 401 | 403) {
  const again = await openStream(url, credential);
  await again.ended;
  assert.equal(again.status, status, again.body);
}

/** Tracks whether a stream has ended. */
function watch(s: Stream): { open: () => boolean } {
  let ended = false;
  void s.ended.then(() => {
    ended = true;
  });
  return { open: () => !ended };
}

test('a key’s stream closes within 5 s of the key being revoked (default check interval)', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const url = await listen(app);
  const { id, key } = await makeKey(app, admin.token);
  const s = await opened(url, key);

  const revoked = await call(app, 'DELETE', `/api-keys/${id}`, { token: admin.token });
  assert.equal(revoked.status, 200, revoked.raw.body);
  await closesWithin(s, Date.now());
  await reconnectRefused(url, key, 401);
});

test('a key’s stream closes when the key loses events:read, or its secret is rotated away', async (t) => {
  const app = await buildTestApp(t, {}, FAST);
  const admin = await createStaff(app, 'admin');
  const url = await listen(app);
  const narrowed = await makeKey(app, admin.token, ['events:read', 'guests:read']);
  const rotated = await makeKey(app, admin.token);
  const s1 = await opened(url, narrowed.key);
  const s2 = await opened(url, rotated.key);

  const patch = await call(app, 'PATCH', `/api-keys/${narrowed.id}`, {
    token: admin.token,
    body: { scopes: ['guests:read'] },
  });
  assert.equal(patch.status, 200, patch.raw.body);
  // Without a grace period the replaced secret stops at once: so does its stream.
  const rotate = await call(app, 'POST', `/api-keys/${rotated.id}/rotate`, {
    token: admin.token,
    body: { graceSeconds: 0 },
  });
  assert.equal(rotate.status, 200, rotate.raw.body);
  const since = Date.now();
  await closesWithin(s1, since);
  await reconnectRefused(url, narrowed.key, 403);
  await closesWithin(s2, since);
  await reconnectRefused(url, rotated.key, 401);
  // The new secret streams.
  assert.equal((await opened(url, rotate.data.key)).status, 200);
});

test('a token’s stream closes when the token is logged out, refreshed, or outdated by a password change', async (t) => {
  const app = await buildTestApp(t, {}, FAST);
  const url = await listen(app);
  const [a, b, c] = [
    await createStaff(app, 'manager'),
    await createStaff(app, 'admin'),
    await createStaff(app, 'staff'),
  ];
  const streams = [await opened(url, a.token), await opened(url, b.token), await opened(url, c.token)];

  assert.equal((await call(app, 'POST', '/auth/logout', { token: a.token })).status, 200);
  assert.equal((await call(app, 'POST', '/auth/refresh', { token: b.token })).status, 200);
  const changed = await call(app, 'POST', '/auth/password', {
    token: c.token,
    body: { currentPassword: PASSWORD, newPassword: 'another horse battery staple' },
  });
  assert.equal(changed.status, 200, changed.raw.body);
  const since = Date.now();
  await closesWithin(streams[0]!, since);
  await reconnectRefused(url, a.token, 401);
  await closesWithin(streams[1]!, since);
  await reconnectRefused(url, b.token, 401);
  await closesWithin(streams[2]!, since);
  await reconnectRefused(url, c.token, 401);
});

test('a staff member’s stream closes when they are deactivated', async (t) => {
  const app = await buildTestApp(t, {}, FAST);
  const admin = await createStaff(app, 'admin');
  const member = await createStaff(app, 'staff');
  const url = await listen(app);
  const s = await opened(url, member.token);

  const res = await call(app, 'PATCH', `/staff/${member.id}`, { token: admin.token, body: { active: false } });
  assert.equal(res.status, 200, res.raw.body);
  await closesWithin(s, Date.now());
  await reconnectRefused(url, member.token, 401);
});

test('a staff member’s stream closes when they are given another role', async (t) => {
  const app = await buildTestApp(t, {}, FAST);
  const admin = await createStaff(app, 'admin');
  const manager = await createStaff(app, 'manager');
  const url = await listen(app);
  const s = await opened(url, manager.token);

  // Demoted: a manager's stream carries every event, a staff member's only their own.
  const res = await call(app, 'PATCH', `/staff/${manager.id}`, { token: admin.token, body: { role: 'staff' } });
  assert.equal(res.status, 200, res.raw.body);
  await closesWithin(s, Date.now());
  // The token still works (the member is active), now with the new role's reach.
  assert.equal((await call(app, 'GET', '/auth/me', { token: manager.token })).data.role, 'staff');
});

test('a key’s stream lives at most the key stream cap; a token’s until the token expires', async (t) => {
  const app = await buildTestApp(t, {}, { eventStreams: { keyStreamMaxMs: 300 } });
  const admin = await createStaff(app, 'admin');
  const url = await listen(app);
  const { key } = await makeKey(app, admin.token);
  const openedAt = Date.now();
  const keyStream = await opened(url, key);
  const tokenStream = watch(await opened(url, admin.token));
  // A token that expires in one to two seconds.
  const ttl = app.ctx.config.tokenTtlSeconds;
  const { token: short } = app.ctx.tokens.sign(admin.id, 'admin', Date.now() - (ttl - 2) * 1000);
  const shortStream = await opened(url, short);

  await closesWithin(keyStream, openedAt);
  assert.ok(tokenStream.open(), 'a token’s stream is not bound by the key stream cap');
  // The key is still valid: a new stream starts (and gets its own 300 ms).
  const next = await opened(url, key);
  await closesWithin(next, Date.now());
  await closesWithin(shortStream, openedAt);
  assert.ok(tokenStream.open());
});

test('a key revoked on one instance closes its stream open on another instance sharing the store', async (t) => {
  // One store and (on PostgreSQL) one Redis key prefix, as instances of one deployment share them.
  const shared = {
    DATABASE_URL: TEST_STORE === 'postgres' ? await freshPostgres(t, { migrated: true }) : await freshDatabaseUrl(t),
    REDIS_KEY_PREFIX: `gma-test:${randomBytes(6).toString('hex')}:`,
  };
  const a = await buildTestApp(t, shared);
  const b = await buildTestApp(t, shared);
  t.after(async () => {
    await b.close();
    await a.close();
  });
  const admin = await createStaff(a, 'admin');
  const member = await createStaff(a, 'staff');
  const { id, key } = await makeKey(a, admin.token);
  const url = await listen(b);
  const keyStream = await opened(url, key);
  const memberStream = await opened(url, member.token);

  assert.equal((await call(a, 'DELETE', `/api-keys/${id}`, { token: admin.token })).status, 200);
  const res = await call(a, 'PATCH', `/staff/${member.id}`, { token: admin.token, body: { active: false } });
  assert.equal(res.status, 200, res.raw.body);
  const since = Date.now();
  await closesWithin(keyStream, since);
  await reconnectRefused(url, key, 401);
  await closesWithin(memberStream, since);
  await reconnectRefused(url, member.token, 401);
});

test('streams of callers whose access is unchanged stay open while others lose theirs', async (t) => {
  const app = await buildTestApp(t, {}, FAST);
  const admin = await createStaff(app, 'admin');
  const member = await createStaff(app, 'manager');
  const leaver = await createStaff(app, 'manager');
  const url = await listen(app);
  const kept = await makeKey(app, admin.token);
  const lost = await makeKey(app, admin.token);
  // The same member on two devices: logging out one token leaves the other.
  const login = await call(app, 'POST', '/auth/login', { body: { email: member.email, password: PASSWORD } });
  assert.equal(login.status, 200, login.raw.body);
  const otherDevice = login.data.token as string;

  const staying = [
    await opened(url, admin.token),
    await opened(url, kept.key),
    await opened(url, otherDevice),
    await opened(url, admin.token),
  ];
  const states = staying.map(watch);
  const going = [lost.key, member.token, leaver.token];
  const goingStreams = await Promise.all(going.map((credential) => opened(url, credential)));

  await call(app, 'DELETE', `/api-keys/${lost.id}`, { token: admin.token });
  await call(app, 'POST', '/auth/logout', { token: member.token });
  await call(app, 'PATCH', `/staff/${leaver.id}`, { token: admin.token, body: { active: false } });
  // Changes that take nobody's access: a key's name, a member's name, another key's creation.
  await call(app, 'PATCH', `/api-keys/${kept.id}`, { token: admin.token, body: { name: 'Renamed' } });
  await call(app, 'PATCH', `/staff/${admin.id}`, { token: admin.token, body: { name: 'Renamed admin' } });
  await makeKey(app, admin.token);
  const since = Date.now();
  for (const s of goingStreams) await closesWithin(s, since);
  for (const credential of going) await reconnectRefused(url, credential, 401);
  // Several checks later the others are still open, and still carry events.
  await sleep(500);
  assert.deepEqual(
    states.map((s) => s.open()),
    [true, true, true, true],
  );
  await call(app, 'POST', '/guests', { token: admin.token, body: { name: 'Still here' } });
  for (const s of staying) {
    const deadline = Date.now() + 3000;
    while (!s.events.some((e) => e.data.type === 'guest.created' && e.data.data.name === 'Still here')) {
      assert.ok(Date.now() < deadline, s.body);
      await sleep(10);
    }
  }
});

test('a stream whose caller’s access cannot be checked (the store failing) is ended', async (t) => {
  const app = await buildTestApp(t, {}, FAST);
  const admin = await createStaff(app, 'admin');
  const url = await listen(app);
  const { key } = await makeKey(app, admin.token);
  const s = await opened(url, key);
  const state = watch(s);
  await sleep(1000);
  assert.ok(state.open(), 'confirmed while the store answers');
  // The table the check reads is gone: nothing can confirm the key any more.
  await sql`alter table api_keys rename to api_keys_away`.execute(app.ctx.store.db);
  await closesWithin(s, Date.now());
});
