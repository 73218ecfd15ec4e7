// Delivery across a crash: the real server (src/server.ts) on a file store or a fresh PostgreSQL
// database sends texts to a Twilio-shaped fake on loopback (test/channels/fakes.ts). The fake hangs
// the first attempt; while that send is in flight, with a later text of the same conversation
// committed and waiting behind it and a text of another conversation just posted, the server is
// killed with SIGKILL and started again on the same store. Every text must then reach the
// provider (at least once: the one cut off mid-send again), end `sent` with the provider's id,
// and exist as exactly one message row. The dead instance's claims run out after the lease
// (CHANNEL_LEASE_MS, by default twice the send timeout plus 5 s), not minutes later; the one cut
// off mid-send is sent again as a new attempt (counted when it is claimed).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fakeTwilio, twilioEnv, until } from '../channels/fakes.js';
import { freshDatabaseUrl, TEST_STORE } from '../helpers.js';
import { adminToken, idsInStore, serverEnv, startServer } from './support.js';

async function api(base: string, token: string, method: string, path: string, body?: unknown) {
  const res = await fetch(`${base}/api/v1${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  // biome-ignore lint/suspicious/noExplicitAny: the API's JSON, asserted on below.
  const json = (await res.json()) as any;
  return { status: res.status, data: json.data, body: json };
}

test(`delivery: SIGKILL mid-send, then restart: every committed text is sent, once as a row (${TEST_STORE})`, {
  timeout: 300_000,
}, async (t) => {
  const twilio = await fakeTwilio(t);
  const databaseUrl = await freshDatabaseUrl(t);
  const env = serverEnv(databaseUrl, {
    ...twilioEnv(twilio),
    CHANNEL_POLL_INTERVAL_MS: '100',
    CHANNEL_RETRY_BASE_MS: '50',
    // The lease is 2 × this + 5 s: the restarted server takes the dead one's claim after ~9 s.
    CHANNEL_SEND_TIMEOUT_MS: '2000',
  });

  let server = await startServer(t, env);
  let token = await adminToken(server.base);
  const conversation = async (name: string, phone: string) => {
    const guest = await api(server.base, token, 'POST', '/guests', { name, phone });
    assert.equal(guest.status, 201, JSON.stringify(guest.body));
    const c = await api(server.base, token, 'POST', '/conversations', { guestId: guest.data.id, channel: 'sms' });
    assert.equal(c.status, 201, JSON.stringify(c.body));
    return c.data.id as string;
  };
  const a = await conversation('Crash A', '+15550107001');
  const b = await conversation('Crash B', '+15550107002');
  const post = async (c: string, content: string) => {
    const m = await api(server.base, token, 'POST', `/conversations/${c}/messages`, { content });
    assert.equal(m.status, 201, JSON.stringify(m.body));
    return { conversation: c, id: m.data.id as string, content };
  };

  // The first attempt hangs at the provider: the server dies with it in flight.
  twilio.failNext('hang');
  const inFlight = await post(a, 'a: cut off mid-send');
  await until('the first text reaches the provider', () => twilio.requests.length === 1);
  const waiting = await post(a, 'a: committed, waiting behind it');
  const racing = await post(b, 'b: posted just before the kill');
  server.child.kill('SIGKILL');
  const exit = await server.exited;
  assert.equal(exit.signal, 'SIGKILL');
  const texts = [inFlight, waiting, racing];
  t.diagnostic(`killed with ${twilio.requests.length} request(s) at the provider (the first hung)`);

  const restartedAt = Date.now();
  server = await startServer(t, env);
  token = await adminToken(server.base);
  for (const m of texts) {
    let last: unknown;
    await until(
      `${m.content} is sent after the restart`,
      async () => {
        const got = await api(server.base, token, 'GET', `/conversations/${m.conversation}/messages/${m.id}`);
        assert.equal(got.status, 200);
        last = got.data;
        assert.notEqual(got.data.deliveryStatus, 'failed', JSON.stringify(got.data));
        return got.data.deliveryStatus === 'sent';
      },
      // Bounded (over 30 s): the dead instance's lease is 9 s, then a send or two.
      3000,
    ).catch((err) => assert.fail(`${err.message}; last seen ${JSON.stringify(last)}`));
  }
  t.diagnostic(`all sent ${Date.now() - restartedAt} ms after the restart began`);

  // At least once at the provider (the one cut off mid-send was tried again), in order per
  // conversation; each message's externalId is one of the sids Twilio gave for its text.
  const bodies = (to: string) => twilio.requests.filter((r) => new URLSearchParams(r.body).get('To') === to);
  const toA = bodies('+15550107001').map((r) => new URLSearchParams(r.body).get('Body'));
  assert.deepEqual([...new Set(toA)], [inFlight.content, waiting.content], `order of a: ${toA}`);
  for (const m of texts) {
    const accepted = twilio.accepted.filter((x) => x.form.Body === m.content);
    assert.ok(accepted.length >= 1, `${m.content} accepted at least once`);
    const got = await api(server.base, token, 'GET', `/conversations/${m.conversation}/messages/${m.id}`);
    assert.ok(
      accepted.some((x) => x.sid === got.data.externalId),
      `${m.content}: ${got.data.externalId} is a sid Twilio gave it`,
    );
  }
  assert.equal(twilio.accepted.filter((x) => x.form.Body === waiting.content).length, 1, 'never sent before the kill');

  // One row per text: the conversations count and list exactly what was posted.
  for (const [c, n] of [
    [a, 2],
    [b, 1],
  ] as const) {
    const list = await api(server.base, token, 'GET', `/conversations/${c}/messages?limit=100`);
    assert.equal(list.body.meta.total, n);
    assert.equal(list.data.length, n);
    const conv = await api(server.base, token, 'GET', `/conversations/${c}`);
    assert.equal(conv.data.messageCount, n);
  }
  server.child.kill('SIGTERM');
  assert.equal((await server.exited).code, 0);
  const stored = await idsInStore(databaseUrl, 'messages');
  assert.equal(stored.size, 3);
  for (const m of texts) assert.ok(stored.has(m.id));
});
