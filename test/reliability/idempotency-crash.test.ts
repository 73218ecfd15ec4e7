// Idempotency across a crash: the real server under 16 writers, each sending messages with an
// Idempotency-Key of its own, is killed with SIGKILL at a seeded random moment; some requests were
// answered, some cut off before their answer (committed or not). Restarted on the same store, every
// key is retried: an answered one replays its message (same id, Idempotent-Replayed), a cut-off
// one replays if it had committed and runs now if not. Afterwards each key's message is stored
// exactly once. CRASH_SEED chooses the moment.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { freshDatabaseUrl, TEST_STORE } from '../helpers.js';
import { adminToken, messageContents, prng, serverEnv, startServer } from './support.js';

const WRITERS = 16;
const SEED = Number(process.env.CRASH_SEED ?? 20261125);

async function send(base: string, token: string, conversation: string, key: string) {
  const res = await fetch(`${base}/api/v1/conversations/${conversation}/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}`, 'idempotency-key': key },
    body: JSON.stringify({ content: key, type: 'note' }),
  });
  const json = (await res.json()) as { data?: { id: string } };
  return { status: res.status, id: json.data?.id, replayed: res.headers.get('idempotent-replayed') === 'true' };
}

test(`idempotency: a key retried after SIGKILL replays or runs, never twice (${TEST_STORE}, seed ${SEED})`, {
  timeout: 300_000,
}, async (t) => {
  const databaseUrl = await freshDatabaseUrl(t);
  const env = serverEnv(databaseUrl);
  const first = await startServer(t, env);
  const token = await adminToken(first.base);
  const post = (path: string, body: unknown) =>
    fetch(`${first.base}/api/v1${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify(body),
    }).then(async (r) => ((await r.json()) as { data: { id: string } }).data.id);
  const guest = await post('/guests', { name: 'Crash Guest' });
  const conversation = await post('/conversations', { guestId: guest, channel: 'web' });

  const answered = new Map<string, string>();
  const cutOff = new Set<string>();
  let running = true;
  const writer = async () => {
    while (running) {
      const key = randomUUID();
      try {
        const res = await send(first.base, token, conversation, key);
        assert.equal(res.status, 201);
        answered.set(key, res.id!);
      } catch (err) {
        if (!first.hasExited() && !/fetch failed|other side closed|ECONNRESET|terminated/.test(String(err))) throw err;
        cutOff.add(key);
        return;
      }
    }
  };
  const writers = Array.from({ length: WRITERS }, writer);
  await sleep(Math.round(300 + prng(SEED)() * 1200));
  first.child.kill('SIGKILL');
  await first.exited;
  running = false;
  await Promise.all(writers);
  t.diagnostic(`${answered.size} answered, ${cutOff.size} cut off by the kill`);
  assert.ok(answered.size > 0, 'some requests were answered before the kill');

  const second = await startServer(t, env);
  const again = await adminToken(second.base);
  let replayedCutOff = 0;
  for (const [key, id] of answered) {
    const res = await send(second.base, again, conversation, key);
    assert.equal(res.status, 201, key);
    assert.equal(res.id, id, 'an answered key replays its message');
    assert.ok(res.replayed);
  }
  for (const key of cutOff) {
    const res = await send(second.base, again, conversation, key);
    assert.equal(res.status, 201, key);
    if (res.replayed) replayedCutOff++;
  }
  t.diagnostic(`${replayedCutOff} of the cut-off requests had committed and replayed`);
  second.child.kill('SIGTERM');
  await second.exited;

  const contents = await messageContents(databaseUrl);
  const counts = new Map<string, number>();
  for (const c of contents) counts.set(c, (counts.get(c) ?? 0) + 1);
  for (const key of [...answered.keys(), ...cutOff]) assert.equal(counts.get(key), 1, `key ${key} stored once`);
});
