// Crash durability: the real server (src/server.ts, SQLITE_SYNCHRONOUS=FULL, a file store or a
// fresh PostgreSQL database) under 32 concurrent writers creating guests and messages is killed
// with SIGKILL at a seeded random moment, then restarted on the same store, CRASH_ROUNDS times
// (default 5). Afterwards every id the API acknowledged (a 2xx whose body arrived) is stored, the
// store passes its integrity check (SQLite `pragma integrity_check`, PostgreSQL amcheck), and
// every conversation's messageCount equals its messages (no half-applied transaction).
// CRASH_ROUNDS, CRASH_WRITERS and CRASH_SEED choose the run; `npm run test:reliability` runs 5.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { freshDatabaseUrl, TEST_STORE } from '../helpers.js';
import { adminToken, idsInStore, integrityCheck, prng, serverEnv, startServer } from './support.js';

const ROUNDS = Number(process.env.CRASH_ROUNDS ?? 5);
const WRITERS = Number(process.env.CRASH_WRITERS ?? 32);
const SEED = Number(process.env.CRASH_SEED ?? 20261123);

async function post(base: string, token: string, path: string, body: unknown): Promise<string | null> {
  const res = await fetch(`${base}/api/v1${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify(body),
  });
  const json = (await res.json()) as { data?: { id: string } };
  if (res.status !== 201) throw new Error(`${path}: ${res.status} ${JSON.stringify(json)}`);
  return json.data!.id;
}

test(`crash: ${ROUNDS} rounds of SIGKILL under ${WRITERS} writers lose no acknowledged write (${TEST_STORE}, seed ${SEED})`, {
  timeout: 600_000,
}, async (t) => {
  const databaseUrl = await freshDatabaseUrl(t);
  const random = prng(SEED);
  const acked = { guests: new Set<string>(), messages: new Set<string>() };
  const conversations: string[] = [];
  const env = serverEnv(databaseUrl);

  for (let round = 1; round <= ROUNDS; round++) {
    const server = await startServer(t, env);
    const token = await adminToken(server.base);
    // A conversation of this round that the writers add messages to.
    const guest = (await post(server.base, token, '/guests', { name: `Round ${round}` }))!;
    acked.guests.add(guest);
    const conversation = (await post(server.base, token, '/conversations', { guestId: guest, channel: 'web' }))!;
    conversations.push(conversation);

    let running = true;
    let errors = 0;
    const writer = async (w: number) => {
      for (let i = 0; running; i++) {
        try {
          if (i % 2 === 0) {
            acked.guests.add((await post(server.base, token, '/guests', { name: `G ${round}.${w}.${i}` }))!);
          } else {
            const target = conversations[(w + i) % conversations.length]!;
            acked.messages.add(
              (await post(server.base, token, `/conversations/${target}/messages`, {
                content: `m ${round}.${w}.${i}`,
              }))!,
            );
          }
        } catch (err) {
          // Only the kill may interrupt a writer: a refused write would be an error of its own.
          if (!server.hasExited() && !/fetch failed|other side closed|ECONNRESET|terminated/.test(String(err)))
            throw err;
          errors++;
          if (server.hasExited()) return;
          await sleep(5);
        }
      }
    };
    const before = acked.guests.size + acked.messages.size;
    const writers = Array.from({ length: WRITERS }, (_, w) => writer(w));
    const killAfter = Math.round(300 + random() * 1700);
    await sleep(killAfter);
    server.child.kill('SIGKILL');
    const exit = await server.exited;
    running = false;
    await Promise.all(writers);
    assert.equal(exit.signal, 'SIGKILL');
    t.diagnostic(
      `round ${round}: killed after ${killAfter} ms, ${acked.guests.size + acked.messages.size - before} writes acknowledged, ${errors} cut off`,
    );
  }

  assert.equal(await integrityCheck(databaseUrl), 'ok');
  const guests = await idsInStore(databaseUrl, 'guests');
  const messages = await idsInStore(databaseUrl, 'messages');
  const lostGuests = [...acked.guests].filter((id) => !guests.has(id));
  const lostMessages = [...acked.messages].filter((id) => !messages.has(id));
  t.diagnostic(
    `acknowledged ${acked.guests.size} guests and ${acked.messages.size} messages; stored ${guests.size} and ${messages.size}`,
  );
  assert.deepEqual(lostGuests, [], 'acknowledged guests lost');
  assert.deepEqual(lostMessages, [], 'acknowledged messages lost');

  // A last start on the crashed store: it opens, and every conversation's counter matches its messages.
  const server = await startServer(t, env);
  const token = await adminToken(server.base);
  for (const id of conversations) {
    const headers = { authorization: `Bearer ${token}` };
    const conv = (await (await fetch(`${server.base}/api/v1/conversations/${id}`, { headers })).json()) as {
      data: { messageCount: number };
    };
    const list = (await (
      await fetch(`${server.base}/api/v1/conversations/${id}/messages?limit=1`, { headers })
    ).json()) as {
      meta: { total: number };
    };
    assert.equal(conv.data.messageCount, list.meta.total, `conversation ${id}`);
  }
  server.child.kill('SIGTERM');
  assert.equal((await server.exited).code, 0);
});
