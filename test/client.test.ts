// Tests the typed client (clients/typescript) as an integrator uses it, against the app on a real
// port: log in, create a guest and conversations, walk a list by cursor, follow the event feed,
// and check webhook signatures made the way the server makes them.
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { test } from 'node:test';
import { ApiError, createGuestApi, unwrap, verifyWebhook } from '../clients/typescript/src/index.js';
import { buildTestApp, createStaff, PASSWORD } from './helpers.js';

test('the client logs in, creates, walks a list by cursor and follows the feed', async (t) => {
  const app = await buildTestApp(t, { RATE_LIMIT_STANDARD: '10000' });
  const admin = await createStaff(app, 'admin');
  await app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = app.server.address() as { port: number };
  const client = createGuestApi({ baseUrl: `http://127.0.0.1:${port}` });

  await assert.rejects(client.login(admin.email, 'wrong password!'), (err: unknown) => {
    return (
      err instanceof ApiError && err.status === 401 && err.code === 'INVALID_CREDENTIALS' && err.requestId !== null
    );
  });
  const me = await client.login(admin.email, PASSWORD);
  assert.equal(me.user.id, admin.id);

  const guest = unwrap(await client.api.POST('/api/v1/guests', { body: { name: 'Client Guest', tags: ['vip'] } }));
  assert.match(guest.id, /^gst_/);
  const made: string[] = [];
  for (let i = 0; i < 7; i++) {
    const c = unwrap(
      await client.api.POST('/api/v1/conversations', { body: { guestId: guest.id, channel: 'web', subject: `S${i}` } }),
    );
    made.push(c.id);
  }
  const walked: string[] = [];
  for await (const c of client.items('/api/v1/conversations', { query: { status: 'open' } }, 3)) {
    walked.push(c.id);
    assert.equal(c.guest.name, 'Client Guest');
  }
  assert.deepEqual(walked, [...made].reverse(), 'newest activity first, each once');

  const refreshed = await client.refresh();
  assert.notEqual(refreshed.token, undefined);

  const controller = new AbortController();
  const types: string[] = [];
  for await (const event of client.events({
    types: ['conversation.created'],
    signal: controller.signal,
    intervalMs: 20,
  })) {
    types.push(event.type);
    if (types.length === made.length) controller.abort();
  }
  assert.deepEqual(types, Array(made.length).fill('conversation.created'));
});

test('verifyWebhook accepts the server scheme and refuses a forged, altered or stale request', () => {
  const secret = 'whsec_test_0123456789';
  const body = '{"id":"whd_1","event":{"type":"guest.created"}}';
  const now = 1_795_401_288_000;
  const ts = String(now / 1000);
  const sig = `v1=${createHmac('sha256', secret).update(`${ts}.${body}`).digest('hex')}`;
  const headers = { 'webhook-id': 'whd_1', 'webhook-timestamp': ts, 'webhook-signature': sig };
  assert.equal(verifyWebhook(secret, headers, body, 300, now), true);
  assert.equal(verifyWebhook(secret, new Headers(headers), Buffer.from(body), 300, now), true);
  assert.equal(verifyWebhook('another secret', headers, body, 300, now), false);
  assert.equal(verifyWebhook(secret, headers, body.replace('guest', 'staff'), 300, now), false);
  assert.equal(verifyWebhook(secret, headers, body, 300, now + 301_000), false);
  assert.equal(verifyWebhook(secret, { ...headers, 'webhook-signature': 'v1=00' }, body, 300, now), false);
  assert.equal(verifyWebhook(secret, { ...headers, 'webhook-timestamp': null }, body, 300, now), false);
});

test('the client sends each write with an Idempotency-Key and retries a lost answer without a second write', async (t) => {
  const app = await buildTestApp(t, { RATE_LIMIT_STANDARD: '10000' });
  const admin = await createStaff(app, 'admin');
  await app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = app.server.address() as { port: number };
  const keys: (string | null)[] = [];
  let lose = 1;
  // The network as an integrator meets it: the server applies the first POST, and its answer is lost.
  const flaky: typeof fetch = async (input, init) => {
    const request = new Request(input, init);
    if (request.method === 'POST' && request.url.endsWith('/messages'))
      keys.push(request.headers.get('idempotency-key'));
    const res = await fetch(request);
    if (request.method === 'POST' && request.url.endsWith('/messages') && lose-- > 0) {
      await res.arrayBuffer();
      throw new TypeError('fetch failed: socket hang up');
    }
    return res;
  };
  const client = createGuestApi({ baseUrl: `http://127.0.0.1:${port}`, token: admin.token, fetch: flaky });
  const guest = unwrap(await client.api.POST('/api/v1/guests', { body: { name: 'Retry Guest' } }));
  const conv = unwrap(await client.api.POST('/api/v1/conversations', { body: { guestId: guest.id, channel: 'web' } }));
  const sent = await client.api.POST('/api/v1/conversations/{id}/messages', {
    params: { path: { id: conv.id } },
    body: { content: 'Your table is ready' },
  });
  assert.equal(sent.response.headers.get('idempotent-replayed'), 'true', 'the retry replayed the first answer');
  assert.equal(keys.length, 2);
  assert.match(keys[0] ?? '', /^[0-9a-f-]{36}$/);
  assert.equal(keys[1], keys[0], 'the same key on the retry');
  const listed = unwrap(
    await client.api.GET('/api/v1/conversations/{id}/messages', { params: { path: { id: conv.id } } }),
  );
  assert.deepEqual(
    listed.map((m) => m.content),
    ['Your table is ready'],
    'one message',
  );
  assert.equal(unwrap(sent).id, listed[0]!.id);
});
