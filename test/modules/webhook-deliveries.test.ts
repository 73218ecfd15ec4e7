// Webhook deliveries against a real HTTP receiver: signed and prompt, retried on 5xx with the same
// Webhook-Id, not retried on 4xx, redelivered on request, in order per endpoint, disabled after
// repeated failures, and resumed by a new app on the same store after a restart.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance } from 'fastify';
import { buildTestApp, call, createStaff, freshDatabaseUrl } from '../helpers.js';
import { readFeed, registerWebhook, signatureValid, startReceiver, WEBHOOK_ENV } from './events-helpers.js';

interface DeliveryView {
  id: string;
  status: string;
  attempts: number;
  lastResponseCode: number | null;
  lastError: string | null;
  eventId: string;
  eventType: string;
}

/** Polls the deliveries list until `done` holds for it. */
async function waitForDeliveries(
  app: FastifyInstance,
  token: string,
  hookId: string,
  done: (d: DeliveryView[]) => boolean,
  timeoutMs = 5000,
): Promise<DeliveryView[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await call(app, 'GET', `/webhooks/${hookId}/deliveries?limit=100`, { token });
    assert.equal(res.status, 200);
    if (done(res.data)) return res.data;
    if (Date.now() > deadline) assert.fail(`deliveries never settled: ${JSON.stringify(res.data)}`);
    await sleep(20);
  }
}

test('creating a guest and sending a message produce signed deliveries of the subscribed events', async (t) => {
  const app = await buildTestApp(t, WEBHOOK_ENV);
  const admin = await createStaff(app, 'admin');
  const rx = await startReceiver(t);
  const hook = await registerWebhook(app, admin.token, rx.url, ['guest.created', 'message.created']);

  const guest = await call(app, 'POST', '/guests', { token: admin.token, body: { name: 'Fatima' } });
  const cnv = await call(app, 'POST', '/conversations', {
    token: admin.token,
    body: { guestId: guest.data.id, channel: 'web' },
  });
  const sent = await call(app, 'POST', `/conversations/${cnv.data.id}/messages`, {
    token: admin.token,
    body: { content: 'Your room is ready' },
  });
  // Commits wake the dispatcher, so these arrive in milliseconds; the bound only ends a stuck test
  // (how fast deliveries go is measured by the bench, not asserted here).
  const got = await rx.waitFor(2, 15_000);
  assert.deepEqual(
    got.map((r) => r.json.event.type),
    ['guest.created', 'message.created'],
    'conversation.created is not subscribed',
  );
  assert.deepEqual(got[0]!.json.event.data, guest.data);
  assert.deepEqual(got[1]!.json.event.data, sent.data);
  for (const r of got) {
    assert.ok(signatureValid(hook.secret, r), 'the signature verifies with the secret shown at creation');
    assert.equal(r.headers['content-type'], 'application/json');
    assert.equal(r.headers['user-agent'], 'GuestMessagingAPI-Webhooks/1');
    assert.equal(r.headers['webhook-id'], r.json.id);
    assert.match(r.json.id, /^whd_/);
    assert.match(String(r.headers['webhook-timestamp']), /^\d{10}$/);
  }
  // The event delivered is the event of the feed.
  const feed = await readFeed(app, admin.token, '&types=guest.created,message.created');
  assert.deepEqual(
    got.map((r) => r.json.event),
    feed,
  );
  const done = await waitForDeliveries(app, admin.token, hook.id, (d) => d.every((x) => x.status === 'succeeded'));
  assert.deepEqual(
    done.map((d) => [d.attempts, d.lastResponseCode]),
    [
      [1, 200],
      [1, 200],
    ],
  );
});

test('quotes, backslashes, placeholders and emoji in a change reach the feed and the payload unchanged', async (t) => {
  // On PostgreSQL the events and deliveries travel with COMMIT as one simple query, their values
  // written in as literals: any text must come back byte for byte, and nothing else may change.
  const app = await buildTestApp(t, WEBHOOK_ENV);
  const admin = await createStaff(app, 'admin');
  const rx = await startReceiver(t);
  const hook = await registerWebhook(app, admin.token, rx.url, ['guest.created', 'guest.updated']);
  const name = `O'Brien \\ "$1" $2; commit; -- é 🛎 \\' ''`;
  const notes = "E'\\x41' $$ dollar $$ \n next line; rollback;";
  const guest = await call(app, 'POST', '/guests', { token: admin.token, body: { name, notes } });
  assert.equal(guest.status, 201, JSON.stringify(guest.body));
  assert.equal(guest.data.name, name);
  const updated = await call(app, 'PATCH', `/guests/${guest.data.id}`, {
    token: admin.token,
    body: { notes: `${notes} again` },
  });
  assert.equal(updated.status, 200, JSON.stringify(updated.body));
  const got = await rx.waitFor(2, 15_000);
  const feed = await readFeed(app, admin.token, '&types=guest.created,guest.updated');
  assert.deepEqual(
    got.map((r) => r.json.event),
    feed,
  );
  assert.deepEqual(feed[0]!.data, guest.data);
  assert.deepEqual(feed[1]!.data, updated.data);
  assert.deepEqual(feed[1]!.changes, { notes: { from: notes, to: `${notes} again` } });
  for (const r of got) assert.ok(signatureValid(hook.secret, r));
  const read = await call(app, 'GET', `/guests/${guest.data.id}`, { token: admin.token });
  assert.deepEqual(read.data, updated.data);
});

test('a delivery leaves once its event commits, without waiting for the poll; an unsubscribed or inactive endpoint gets none', async (t) => {
  // A one-minute poll: only the commit's wake-up (which counts the deliveries it made) sends at once.
  const app = await buildTestApp(t, { ...WEBHOOK_ENV, EVENT_POLL_INTERVAL_MS: '60000' });
  const admin = await createStaff(app, 'admin');
  const rx = await startReceiver(t);
  const other = await startReceiver(t);
  const off = await startReceiver(t);
  await registerWebhook(app, admin.token, rx.url, ['guest.created']);
  await registerWebhook(app, admin.token, other.url, ['task.created']);
  const inactive = await registerWebhook(app, admin.token, off.url);
  const patched = await call(app, 'PATCH', `/webhooks/${inactive.id}`, { token: admin.token, body: { active: false } });
  assert.equal(patched.status, 200, JSON.stringify(patched.body));
  // Let the first poll (at start) pass, so only a wake-up can deliver what follows.
  await sleep(300);
  const guest = await call(app, 'POST', '/guests', { token: admin.token, body: { name: 'Prompt Delivery' } });
  assert.equal(guest.status, 201, JSON.stringify(guest.body));
  const got = await rx.waitFor(1, 5_000);
  assert.equal(got[0]!.json.event.type, 'guest.created');
  assert.deepEqual(got[0]!.json.event.data, guest.data);
  await sleep(200);
  assert.equal(other.received.length, 0, 'not subscribed to guest.created');
  assert.equal(off.received.length, 0, 'inactive');
});

test("one change's several events list their deliveries in the events' order, newest first", async (t) => {
  const app = await buildTestApp(t, WEBHOOK_ENV);
  const admin = await createStaff(app, 'admin');
  const other = await createStaff(app, 'staff');
  const rx = await startReceiver(t);
  const hook = await registerWebhook(app, admin.token, rx.url, ['*']);
  const guest = await call(app, 'POST', '/guests', {
    token: admin.token,
    body: { name: 'Ordered', phone: '+15550102030' },
  });
  const cnv = await call(app, 'POST', '/conversations', {
    token: admin.token,
    body: { guestId: guest.data.id, channel: 'sms' },
  });
  // One transaction, three events: updated, status changed, assigned.
  const patched = await call(app, 'PATCH', `/conversations/${cnv.data.id}`, {
    token: admin.token,
    body: { status: 'pending', assignee: other.id },
  });
  assert.equal(patched.status, 200, JSON.stringify(patched.body));
  const list = await waitForDeliveries(app, admin.token, hook.id, (d) => d.length >= 5);
  const ids = list.map((d) => Number(d.eventId));
  assert.deepEqual(
    ids,
    [...ids].sort((a, b) => b - a),
    `newest first is latest event first: ${list.map((d) => d.eventType).join(', ')}`,
  );
});

test('a receiver answering 500 twice then 200 gets it on the third attempt, with the same Webhook-Id', async (t) => {
  const app = await buildTestApp(t, WEBHOOK_ENV);
  const admin = await createStaff(app, 'admin');
  const rx = await startReceiver(t);
  rx.answer = (n) => (n < 2 ? 500 : 200);
  const hook = await registerWebhook(app, admin.token, rx.url);
  await call(app, 'POST', '/guests', { token: admin.token, body: { name: 'Retry' } });
  const got = await rx.waitFor(3);
  assert.equal(new Set(got.map((r) => r.headers['webhook-id'])).size, 1);
  assert.equal(new Set(got.map((r) => r.body)).size, 1, 'the same body every time');
  const [d] = await waitForDeliveries(app, admin.token, hook.id, (ds) => ds[0]?.status === 'succeeded');
  assert.equal(d!.attempts, 3);
  assert.equal(d!.lastResponseCode, 200);
  const again = await call(app, 'GET', `/webhooks/${hook.id}`, { token: admin.token });
  assert.equal(again.data.consecutiveFailures, 0, 'a success resets the failure count');
});

test('a 400 is not retried; redelivery sends it again with the same id', async (t) => {
  const app = await buildTestApp(t, WEBHOOK_ENV);
  const admin = await createStaff(app, 'admin');
  const rx = await startReceiver(t);
  rx.answer = (n) => (n === 0 ? 400 : 200);
  const hook = await registerWebhook(app, admin.token, rx.url);
  await call(app, 'POST', '/guests', { token: admin.token, body: { name: 'Bad request' } });
  const [failed] = await waitForDeliveries(app, admin.token, hook.id, (d) => d[0]?.status === 'failed');
  assert.deepEqual([failed!.attempts, failed!.lastResponseCode, failed!.lastError], [1, 400, 'HTTP 400']);
  await sleep(200);
  assert.equal(rx.received.length, 1, 'not retried');

  const filtered = await call(app, 'GET', `/webhooks/${hook.id}/deliveries?status=succeeded`, { token: admin.token });
  assert.equal(filtered.body.meta.total, 0);
  const redo = await call(app, 'POST', `/webhooks/${hook.id}/deliveries/${failed!.id}/redeliver`, {
    token: admin.token,
  });
  assert.equal(redo.status, 202);
  assert.equal(redo.data.status, 'pending');
  const got = await rx.waitFor(2);
  assert.equal(got[1]!.headers['webhook-id'], failed!.id);
  const [ok] = await waitForDeliveries(app, admin.token, hook.id, (d) => d[0]?.status === 'succeeded');
  assert.equal(ok!.attempts, 2);
  const missing = await call(app, 'POST', `/webhooks/${hook.id}/deliveries/whd_nope/redeliver`, {
    token: admin.token,
  });
  assert.equal(missing.status, 404);
});

test('per-endpoint order holds for 5 quick changes, even when the first one needs a retry', async (t) => {
  const app = await buildTestApp(t, WEBHOOK_ENV);
  const admin = await createStaff(app, 'admin');
  const rx = await startReceiver(t);
  rx.answer = (n) => (n === 0 ? 503 : 200);
  await registerWebhook(app, admin.token, rx.url, ['guest.created']);
  await Promise.all(
    [1, 2, 3, 4, 5].map((i) => call(app, 'POST', '/guests', { token: admin.token, body: { name: `G${i}` } })),
  );
  const got = await rx.waitFor(6);
  const ids = got.map((r) => Number(r.json.event.id));
  assert.deepEqual(
    ids,
    [...ids].sort((a, b) => a - b),
    'events reach the endpoint in event order',
  );
  assert.equal(ids[0], ids[1], 'the failed first event is retried before any later one is sent');
  assert.equal(new Set(ids).size, 5);
});

test('an endpoint failing WEBHOOK_DISABLE_AFTER times in a row is deactivated and webhook.disabled is written', async (t) => {
  const app = await buildTestApp(t, { ...WEBHOOK_ENV, WEBHOOK_DISABLE_AFTER: '3' });
  const admin = await createStaff(app, 'admin');
  const failing = await startReceiver(t);
  failing.answer = () => 500;
  const monitor = await startReceiver(t);
  const hook = await registerWebhook(app, admin.token, failing.url, ['guest.created']);
  await registerWebhook(app, admin.token, monitor.url, ['webhook.disabled']);
  await call(app, 'POST', '/guests', { token: admin.token, body: { name: 'Doomed' } });

  const [notice] = await monitor.waitFor(1);
  assert.equal(notice!.json.event.type, 'webhook.disabled');
  assert.deepEqual(notice!.json.event.actor, { type: 'system', id: null });
  assert.equal(notice!.json.event.data.id, hook.id);
  assert.equal(notice!.json.event.data.active, false);
  assert.equal(failing.received.length, 3);
  const got = await call(app, 'GET', `/webhooks/${hook.id}`, { token: admin.token });
  assert.equal(got.data.active, false);
  assert.equal(got.data.consecutiveFailures, 3);
  const feed = await readFeed(app, admin.token, '&types=webhook.disabled');
  assert.equal(feed.length, 1);

  // Inactive: new events make no deliveries; the waiting one resumes on re-activation.
  await call(app, 'POST', '/guests', { token: admin.token, body: { name: 'Skipped' } });
  await sleep(200);
  assert.equal(failing.received.length, 3);
  failing.answer = () => 200;
  const on = await call(app, 'PATCH', `/webhooks/${hook.id}`, { token: admin.token, body: { active: true } });
  assert.equal(on.data.consecutiveFailures, 0);
  const after = await failing.waitFor(4);
  assert.equal(after[3]!.json.event.data.name, 'Doomed');
});

test('a restart in the middle of retries resumes them from the store', async (t) => {
  const env = { ...WEBHOOK_ENV, WEBHOOK_RETRY_BASE_MS: '100', DATABASE_URL: await freshDatabaseUrl(t) };
  const rx = await startReceiver(t);
  await rx.stop(); // the receiver is down

  const first = await buildTestApp(t, env);
  const admin = await createStaff(first, 'admin');
  const hook = await registerWebhook(first, admin.token, rx.url);
  await call(first, 'POST', '/guests', { token: admin.token, body: { name: 'Survivor' } });
  const [pending] = await waitForDeliveries(first, admin.token, hook.id, (d) => (d[0]?.attempts ?? 0) >= 1);
  assert.equal(pending!.status, 'pending');
  assert.match(String(pending!.lastError), /ECONNREFUSED/);
  await first.close();

  const second = await buildTestApp(t, env);
  await rx.start();
  const [got] = await rx.waitFor(1, 10_000);
  assert.equal(got!.json.id, pending!.id);
  assert.equal(got!.json.event.data.name, 'Survivor');
  assert.ok(signatureValid(hook.secret, got!));
  const [done] = await waitForDeliveries(second, admin.token, hook.id, (d) => d[0]?.status === 'succeeded');
  assert.ok(done!.attempts >= 2);
  // Before the store is removed (its clean-up was registered first).
  await second.close();
});

test('two instances sharing the store deliver each event exactly once between them', async (t) => {
  const env = { ...WEBHOOK_ENV, DATABASE_URL: await freshDatabaseUrl(t) };
  const rx = await startReceiver(t);
  const a = await buildTestApp(t, env);
  const b = await buildTestApp(t, env);
  const admin = await createStaff(a, 'admin');
  const hook = await registerWebhook(a, admin.token, rx.url, ['guest.created']);

  const n = 30;
  await Promise.all(
    Array.from({ length: n }, (_, i) =>
      call(i % 2 === 0 ? a : b, 'POST', '/guests', { token: admin.token, body: { name: `Guest ${i}` } }),
    ),
  );
  const got = await rx.waitFor(n, 10_000);
  // Both dispatchers keep polling; give a second claim the time it would need to show up.
  await sleep(1500);
  assert.equal(rx.received.length, n, 'no delivery is sent twice');
  assert.equal(new Set(got.map((r) => r.json.id)).size, n);
  assert.deepEqual(
    got.map((r) => r.json.event.data.name).sort(),
    Array.from({ length: n }, (_, i) => `Guest ${i}`).sort(),
  );
  const done = await waitForDeliveries(a, admin.token, hook.id, (d) => d.every((x) => x.status === 'succeeded'));
  assert.equal(done.length, n);
  assert.ok(done.every((d) => d.attempts === 1));
  await b.close();
  await a.close();
});
