// API keys (docs/integrations.md): an admin makes them, a key works within its scopes only, and revoking,
// narrowing, expiring and rotating it hold from the next request, on every instance.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { assertError } from '../fixtures.js';
import { buildTestApp, call, createStaff, freshDatabaseUrl } from '../helpers.js';

async function makeKey(app: FastifyInstance, token: string, body: Record<string, unknown>) {
  const res = await call(app, 'POST', '/api-keys', { token, body });
  assert.equal(res.status, 201, res.raw.body);
  return res.data as { id: string; key: string; scopes: string[] };
}

async function twoInstances(t: Parameters<typeof buildTestApp>[0]) {
  const env = { DATABASE_URL: await freshDatabaseUrl(t), RATE_LIMIT_STANDARD: '1000' };
  const a = await buildTestApp(t, env);
  const b = await buildTestApp(t, env);
  t.after(async () => {
    await b.close();
    await a.close();
  });
  return { a, b };
}

test('an admin creates a key shown once; it reads guests and is refused what its scopes do not allow', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const created = await makeKey(app, admin.token, { name: 'PMS sync', scopes: ['guests:read'] });
  assert.match(created.key, /^gma_key_[0-9a-z]{26}_[A-Za-z0-9_-]{43}$/);
  assert.ok(created.key.includes(created.id));
  assert.deepEqual(created.scopes, ['guests:read']);

  const got = await call(app, 'GET', `/api-keys/${created.id}`, { token: admin.token });
  assert.equal(got.status, 200);
  assert.equal(got.data.key, undefined, 'the key is never shown again');
  assert.equal(got.data.revokedAt, null);
  const listed = await call(app, 'GET', '/api-keys', { token: admin.token });
  assert.deepEqual(
    listed.data.map((k: { id: string }) => k.id),
    [created.id],
  );
  assert.equal(listed.data[0].key, undefined);

  const key = created.key;
  assert.equal((await call(app, 'GET', '/guests', { token: key })).status, 200);
  const refused = await call(app, 'POST', '/guests', { token: key, body: { name: 'Ana' } });
  assertError(refused, 403, 'FORBIDDEN');
  assert.match(refused.body.error.message, /guests:write/);
  assert.deepEqual(refused.body.error.details, { requiredScope: 'guests:write' });
  const conversations = await call(app, 'GET', '/conversations', { token: key });
  assertError(conversations, 403, 'FORBIDDEN');
  assert.match(conversations.body.error.message, /conversations:read/);
  // Routes without a scope take staff tokens only: a key cannot mint keys or act as a session.
  assertError(await call(app, 'GET', '/api-keys', { token: key }), 403, 'FORBIDDEN');
  assertError(await call(app, 'GET', '/auth/me', { token: key }), 403, 'FORBIDDEN');
  const lastUsed = await call(app, 'GET', `/api-keys/${created.id}`, { token: admin.token });
  assert.ok(lastUsed.data.lastUsedAt, 'lastUsedAt is recorded');
});

test('only an admin manages keys; bad bodies are 400s naming the field', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const manager = await createStaff(app, 'manager');
  assertError(
    await call(app, 'POST', '/api-keys', { token: manager.token, body: { name: 'x', scopes: ['guests:read'] } }),
    403,
    'FORBIDDEN',
  );
  for (const body of [
    { name: 'x', scopes: [] },
    { name: 'x', scopes: ['guests:admin'] },
    { name: '', scopes: ['guests:read'] },
    { name: 'x', scopes: ['guests:read'], expiresAt: '2000-01-01T00:00:00.000Z' },
    { name: 'x', scopes: ['guests:read'], extra: true },
  ]) {
    assertError(await call(app, 'POST', '/api-keys', { token: admin.token, body }), 400, 'VALIDATION_ERROR');
  }
  assertError(await call(app, 'GET', '/api-keys/key_nope', { token: admin.token }), 404, 'NOT_FOUND');
});

test('a write scope includes reading; events made by a key name it as the actor', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const { key, id } = await makeKey(app, admin.token, { name: 'CRM', scopes: ['guests:write', 'events:read'] });
  const guest = await call(app, 'POST', '/guests', { token: key, body: { name: 'Ana Key' } });
  assert.equal(guest.status, 201, guest.raw.body);
  assert.equal((await call(app, 'GET', `/guests/${guest.data.id}`, { token: key })).status, 200);
  const events = await call(app, 'GET', '/events?after=0&types=guest.created', { token: key });
  assert.equal(events.status, 200, events.raw.body);
  assert.deepEqual(events.data.at(-1).actor, { type: 'api_key', id });
});

test('a revoked key is refused with 401 TOKEN_INVALID on the next request, also on another instance', async (t) => {
  const { a, b } = await twoInstances(t);
  const admin = await createStaff(a, 'admin');
  const { key, id } = await makeKey(a, admin.token, { name: 'PMS', scopes: ['guests:read'] });
  for (let i = 0; i < 3; i++) assert.equal((await call(a, 'GET', '/guests', { token: key })).status, 200);
  const revoked = await call(b, 'DELETE', `/api-keys/${id}`, { token: admin.token });
  assert.equal(revoked.data.id, id);
  assert.equal(revoked.data.revoked, true);
  assert.match(revoked.data.revokedAt, /^20\d\d-/);
  // Revoking it again changes nothing: the same answer, and no second api_key.revoked entry.
  const again = await call(a, 'DELETE', `/api-keys/${id}`, { token: admin.token });
  assert.deepEqual(again.data, revoked.data);
  const entries = await call(a, 'GET', '/audit-log?action=api_key.revoked', { token: admin.token });
  assert.equal(entries.data.filter((e: { target: { id: string } }) => e.target.id === id).length, 1);
  const next = await call(a, 'GET', '/guests', { token: key });
  assertError(next, 401, 'TOKEN_INVALID');
  assert.match(String(next.headers['www-authenticate']), /invalid_token/);
  assert.ok((await call(a, 'GET', `/api-keys/${id}`, { token: admin.token })).data.revokedAt);
  assertError(
    await call(a, 'PATCH', `/api-keys/${id}`, { token: admin.token, body: { name: 'again' } }),
    409,
    'CONFLICT',
  );
  assertError(await call(a, 'POST', `/api-keys/${id}/rotate`, { token: admin.token, body: {} }), 409, 'CONFLICT');
});

test('narrowed scopes hold from the next request, also on another instance', async (t) => {
  const { a, b } = await twoInstances(t);
  const admin = await createStaff(a, 'admin');
  const { key, id } = await makeKey(a, admin.token, { name: 'PMS', scopes: ['guests:read', 'tasks:read'] });
  for (let i = 0; i < 3; i++) assert.equal((await call(a, 'GET', '/tasks', { token: key })).status, 200);
  const narrowed = await call(b, 'PATCH', `/api-keys/${id}`, { token: admin.token, body: { scopes: ['guests:read'] } });
  assert.deepEqual(narrowed.data.scopes, ['guests:read']);
  assertError(await call(a, 'GET', '/tasks', { token: key }), 403, 'FORBIDDEN');
  assert.equal((await call(a, 'GET', '/guests', { token: key })).status, 200);
});

test('an expired key is refused with 401 TOKEN_EXPIRED; a wrong or malformed one with TOKEN_INVALID', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const soon = new Date(Date.now() + 3600_000).toISOString();
  const { key, id } = await makeKey(app, admin.token, { name: 'Temp', scopes: ['guests:read'], expiresAt: soon });
  assert.equal((await call(app, 'GET', '/guests', { token: key })).status, 200);
  await app.ctx.store.db
    .updateTable('api_keys')
    .set({ expires_at: new Date(Date.now() - 1000).toISOString() })
    .where('id', '=', id)
    .execute();
  assertError(await call(app, 'GET', '/guests', { token: key }), 401, 'TOKEN_EXPIRED');

  const live = await makeKey(app, admin.token, { name: 'Live', scopes: ['guests:read'] });
  const wrongSecret = `${live.key.slice(0, -4)}AAAA`;
  assertError(await call(app, 'GET', '/guests', { token: wrongSecret }), 401, 'TOKEN_INVALID');
  assertError(await call(app, 'GET', '/guests', { token: 'gma_nothing' }), 401, 'TOKEN_INVALID');
  const unknown = `gma_key_${'0'.repeat(26)}_${'A'.repeat(43)}`;
  assertError(await call(app, 'GET', '/guests', { token: unknown }), 401, 'TOKEN_INVALID');
});

test('rotation: the old secret works through the grace period, then stops; without grace at once', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const first = await makeKey(app, admin.token, { name: 'PMS', scopes: ['guests:read'] });
  const rotated = await call(app, 'POST', `/api-keys/${first.id}/rotate`, {
    token: admin.token,
    body: { graceSeconds: 3600 },
  });
  assert.equal(rotated.status, 200, rotated.raw.body);
  assert.notEqual(rotated.data.key, first.key);
  assert.equal(rotated.data.id, first.id);
  assert.equal((await call(app, 'GET', '/guests', { token: first.key })).status, 200, 'old key in its grace');
  assert.equal((await call(app, 'GET', '/guests', { token: rotated.data.key })).status, 200, 'new key');
  // The grace period ends.
  await app.ctx.store.db
    .updateTable('api_keys')
    .set({ previous_expires_at: new Date(Date.now() - 1000).toISOString() })
    .where('id', '=', first.id)
    .execute();
  assertError(await call(app, 'GET', '/guests', { token: first.key }), 401, 'TOKEN_INVALID');

  const again = await call(app, 'POST', `/api-keys/${first.id}/rotate`, { token: admin.token, body: {} });
  assert.equal(again.status, 200, again.raw.body);
  assertError(await call(app, 'GET', '/guests', { token: rotated.data.key }), 401, 'TOKEN_INVALID');
  assert.equal((await call(app, 'GET', '/guests', { token: again.data.key })).status, 200);
});

test('a key counts in its own rate-limit bucket, apart from the admin who made it', async (t) => {
  const app = await buildTestApp(t, { RATE_LIMIT_STANDARD: '5' });
  const admin = await createStaff(app, 'admin');
  const { key } = await makeKey(app, admin.token, { name: 'PMS', scopes: ['guests:read'] });
  const first = await call(app, 'GET', '/guests', { token: key });
  assert.equal(first.headers['x-ratelimit-remaining'], '4');
  for (let i = 0; i < 4; i++) await call(app, 'GET', '/guests', { token: key });
  assertError(await call(app, 'GET', '/guests', { token: key }), 429, 'RATE_LIMITED');
  assert.equal((await call(app, 'GET', '/guests', { token: admin.token })).status, 200, 'the admin is not limited');
});
