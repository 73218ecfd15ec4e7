// A webhook made (or last changed) with an API key belongs to that key (docs/integrations.md): revoking the
// key turns the webhook off in the revocation's own transaction, so nothing is sent to it after; a
// webhook whose key has expired is sent nothing either; an admin turning it on takes it over.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { assertError } from '../fixtures.js';
import { buildTestApp, call, createStaff } from '../helpers.js';
import { readFeed, startReceiver, WEBHOOK_ENV } from './events-helpers.js';

async function keyWith(app: FastifyInstance, token: string, body: Record<string, unknown> = {}) {
  const res = await call(app, 'POST', '/api-keys', {
    token,
    body: { name: 'CRM', scopes: ['webhooks:write', 'guests:write'], ...body },
  });
  assert.equal(res.status, 201, res.raw.body);
  return res.data as { id: string; key: string };
}

async function deliveries(app: FastifyInstance, token: string, hookId: string) {
  const res = await call(app, 'GET', `/webhooks/${hookId}/deliveries?limit=100`, { token });
  assert.equal(res.status, 200, res.raw.body);
  return res.data as { status: string; attempts: number }[];
}

test('revoking a key turns its webhooks off at once: a pending retry is never sent, new events make no delivery', async (t) => {
  // Retries far off: the failed delivery stays pending across the revocation.
  const app = await buildTestApp(t, { ...WEBHOOK_ENV, WEBHOOK_RETRY_BASE_MS: '3600000' });
  const admin = await createStaff(app, 'admin');
  const key = await keyWith(app, admin.token);
  const owned = await startReceiver(t);
  const clock = await startReceiver(t);
  const made = await call(app, 'POST', '/webhooks', {
    token: key.key,
    body: { url: owned.url, events: ['guest.created'] },
  });
  assert.equal(made.status, 201, made.raw.body);
  assert.equal(made.data.apiKeyId, key.id, 'the key owns it');
  const control = await call(app, 'POST', '/webhooks', {
    token: admin.token,
    body: { url: clock.url, events: ['guest.created'] },
  });
  assert.equal(control.data.apiKeyId, null, 'staff own no webhook through a key');

  owned.answer = (n) => (n === 0 ? 200 : 503);
  await call(app, 'POST', '/guests', { token: key.key, body: { name: 'First' } });
  await call(app, 'POST', '/guests', { token: key.key, body: { name: 'Second' } });
  await owned.waitFor(2);
  await clock.waitFor(2);

  assert.equal((await call(app, 'DELETE', `/api-keys/${key.id}`, { token: admin.token })).status, 200);
  const after = await call(app, 'GET', `/webhooks/${made.data.id}`, { token: admin.token });
  assert.equal(after.data.active, false, 'off in the same commit as the revocation');
  assert.equal(after.data.apiKeyId, key.id);
  const disabled = (await readFeed(app, admin.token, '&types=webhook.disabled')).map((e) => [e.actor, e.data.id]);
  assert.deepEqual(disabled, [[{ type: 'staff', id: admin.id }, made.data.id]]);

  // The failed delivery becomes due (time passes); a new event goes to the control endpoint only.
  await app.ctx.store.db
    .updateTable('webhook_deliveries')
    .set({ next_attempt_at: new Date(Date.now() - 1000).toISOString() })
    .where('webhook_id', '=', made.data.id)
    .where('status', '=', 'pending')
    .execute();
  await call(app, 'POST', '/guests', { token: admin.token, body: { name: 'Third' } });
  await clock.waitFor(3);
  await new Promise((r) => setTimeout(r, 200));
  assert.equal(owned.received.length, 2, 'nothing reached the revoked key’s endpoint');
  const mine = await deliveries(app, admin.token, made.data.id);
  assert.deepEqual(
    mine.map((d) => [d.status, d.attempts]),
    [
      ['pending', 1],
      ['succeeded', 1],
    ],
    'no delivery for the third event; the pending one was not attempted again',
  );
  assertError(
    await call(app, 'POST', `/webhooks/${made.data.id}/test`, { token: admin.token }),
    409,
    'CONFLICT',
    'an inactive webhook takes no test',
  );

  // An admin turning it on takes it over: it belongs to no key, and its waiting delivery goes out.
  owned.answer = () => 200;
  const taken = await call(app, 'PATCH', `/webhooks/${made.data.id}`, { token: admin.token, body: { active: true } });
  assert.deepEqual([taken.data.active, taken.data.apiKeyId], [true, null]);
  const [, , resent] = await owned.waitFor(3);
  assert.equal(resent!.json.event.data.name, 'Second');
});

test('a key that changes an admin’s webhook takes it over, and its revocation turns the webhook off', async (t) => {
  const app = await buildTestApp(t, WEBHOOK_ENV);
  const admin = await createStaff(app, 'admin');
  const key = await keyWith(app, admin.token);
  const hook = await call(app, 'POST', '/webhooks', {
    token: admin.token,
    body: { url: 'http://127.0.0.1:9/hook', events: ['*'] },
  });
  const changed = await call(app, 'PATCH', `/webhooks/${hook.data.id}`, {
    token: key.key,
    body: { url: 'http://127.0.0.1:9/elsewhere' },
  });
  assert.equal(changed.status, 200, changed.raw.body);
  assert.equal(changed.data.apiKeyId, key.id);
  await call(app, 'DELETE', `/api-keys/${key.id}`, { token: admin.token });
  assert.equal((await call(app, 'GET', `/webhooks/${hook.data.id}`, { token: admin.token })).data.active, false);
  // A change by staff that does not turn it on leaves the owner as it is.
  const renamed = await call(app, 'PATCH', `/webhooks/${hook.data.id}`, {
    token: admin.token,
    body: { description: 'was the CRM’s' },
  });
  assert.deepEqual([renamed.data.active, renamed.data.apiKeyId], [false, key.id]);
});

test('a webhook whose key has expired is sent nothing: the first delivery due turns it off instead', async (t) => {
  const app = await buildTestApp(t, WEBHOOK_ENV);
  const admin = await createStaff(app, 'admin');
  const key = await keyWith(app, admin.token, { expiresAt: new Date(Date.now() + 3600_000).toISOString() });
  const rx = await startReceiver(t);
  const made = await call(app, 'POST', '/webhooks', {
    token: key.key,
    body: { url: rx.url, events: ['guest.created'] },
  });
  assert.equal(made.status, 201);
  // The key's hour passes.
  await app.ctx.store.db
    .updateTable('api_keys')
    .set({ expires_at: new Date(Date.now() - 1000).toISOString() })
    .where('id', '=', key.id)
    .execute();
  await call(app, 'POST', '/guests', { token: admin.token, body: { name: 'After expiry' } });
  let active = true;
  for (let i = 0; i < 200 && active; i++) {
    await new Promise((r) => setTimeout(r, 10));
    active = (await call(app, 'GET', `/webhooks/${made.data.id}`, { token: admin.token })).data.active;
  }
  assert.equal(active, false, 'turned off by the dispatcher');
  assert.equal(rx.received.length, 0);
  assert.deepEqual(
    (await deliveries(app, admin.token, made.data.id)).map((d) => [d.status, d.attempts]),
    [['pending', 0]],
  );
  const disabled = await readFeed(app, admin.token, '&types=webhook.disabled');
  assert.deepEqual(
    disabled.map((e) => [e.actor.type, e.data.id]),
    [['system', made.data.id]],
  );
});
