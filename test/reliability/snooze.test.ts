// Snoozes across a crash: the real server on a file store or a fresh PostgreSQL database snoozes
// conversations with moments spread over a few seconds, is killed with SIGKILL while some have
// woken and others are still due (a wake-up may be mid-run), and is started again on the same
// store after every moment has passed. Each conversation must then be open, not snoozed, and woken
// by exactly one `conversation.updated` of the system (docs/jobs.md): once across the crash.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { until } from '../channels/fakes.js';
import { freshDatabaseUrl, TEST_STORE } from '../helpers.js';
import { adminToken, serverEnv, startServer } from './support.js';

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

test(`snooze: SIGKILL with wake-ups due, restart after their moments: each woken once (${TEST_STORE})`, {
  timeout: 300_000,
}, async (t) => {
  const databaseUrl = await freshDatabaseUrl(t);
  const env = serverEnv(databaseUrl);
  let server = await startServer(t, env);
  let token = await adminToken(server.base);
  const guest = await api(server.base, token, 'POST', '/guests', { name: 'Snoozed guest' });
  assert.equal(guest.status, 201, JSON.stringify(guest.body));
  const ids: string[] = [];
  const start = Date.now();
  for (let i = 0; i < 12; i++) {
    const c = await api(server.base, token, 'POST', '/conversations', { guestId: guest.data.id, channel: 'web' });
    assert.equal(c.status, 201, JSON.stringify(c.body));
    // Due from 2 s to 4.2 s after the first: the kill at ~3 s leaves about half still due.
    const snoozedUntil = new Date(start + 2000 + i * 200).toISOString();
    const s = await api(server.base, token, 'PATCH', `/conversations/${c.data.id}`, {
      status: 'pending',
      snoozedUntil,
    });
    assert.equal(s.status, 200, JSON.stringify(s.body));
    ids.push(c.data.id);
  }
  await sleep(Math.max(0, start + 3000 - Date.now()));
  server.child.kill('SIGKILL');
  assert.equal((await server.exited).signal, 'SIGKILL');
  await sleep(Math.max(0, start + 5000 - Date.now()));

  const restartedAt = Date.now();
  server = await startServer(t, env);
  const listening = Date.now();
  token = await adminToken(server.base);
  for (const id of ids) {
    await until(`${id} is open after the restart`, async () => {
      const got = await api(server.base, token, 'GET', `/conversations/${id}`);
      return got.data.status === 'open' && got.data.snoozedUntil === null;
    });
  }
  t.diagnostic(
    `every conversation open ${Date.now() - listening} ms after the restarted server answered ` +
      `(${listening - restartedAt} ms to start it)`,
  );
  await sleep(500);
  const feed = await api(server.base, token, 'GET', '/events?types=conversation.updated&limit=100');
  assert.equal(feed.status, 200);
  for (const id of ids) {
    // biome-ignore lint/suspicious/noExplicitAny: the feed's JSON.
    const wakes = feed.data.filter((e: any) => e.data.id === id && e.actor.type === 'system');
    assert.equal(wakes.length, 1, `${id} woken ${wakes.length} times`);
  }
});
