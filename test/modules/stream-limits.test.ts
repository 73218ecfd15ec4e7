// The live stream's limits, over real HTTP: at most STREAMS_PER_CALLER open streams per caller (in
// process, and shared by two instances through Redis on PostgreSQL), a slot given back when a
// stream ends; a stream without a cursor replays no history, `after=0` replays what is kept, and a
// reconnect with Last-Event-ID gets every event after it.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { buildTestApp, call, createStaff, freshDatabaseUrl, TEST_STORE } from '../helpers.js';
import { listen, openStream, type Stream } from './stream-helpers.js';

const guest = (app: FastifyInstance, token: string, name: string) =>
  call(app, 'POST', '/guests', { token, body: { name } });

function assertCapped(s: Stream, cap: number) {
  assert.equal(s.status, 429, s.body);
  assert.match(String(s.headers['content-type']), /application\/json/);
  assert.ok(s.headers['x-request-id']);
  assert.ok(s.headers['x-ratelimit-limit'], 'the gate headers are kept');
  assert.ok(Number(s.headers['retry-after']) > 0);
  const body = JSON.parse(s.body);
  assert.equal(body.success, false);
  assert.equal(body.error.code, 'RATE_LIMITED');
  assert.match(body.error.message, new RegExp(`At most ${cap} event streams`));
}

test('a caller may hold STREAMS_PER_CALLER streams; the next is 429 until one ends', async (t) => {
  const app = await buildTestApp(t, { STREAMS_PER_CALLER: '3' });
  const admin = await createStaff(app, 'admin');
  const other = await createStaff(app, 'admin');
  const url = await listen(app);
  const open = [];
  for (let i = 0; i < 3; i++) open.push(await openStream(url, admin.token));
  for (const s of open) assert.equal(s.status, 200);

  const fourth = await openStream(url, admin.token);
  await fourth.ended;
  assertCapped(fourth, 3);
  // The cap is per caller: someone else still gets a stream.
  const theirs = await openStream(url, other.token);
  assert.equal(theirs.status, 200);

  // A stream that ends gives its slot back.
  open[0]!.close();
  await open[0]!.ended;
  let again = await openStream(url, admin.token);
  while (again.status === 429) again = await openStream(url, admin.token);
  assert.equal(again.status, 200);
  const created = await guest(app, admin.token, 'Delivered');
  const [e] = await again.waitFor(1);
  assert.deepEqual(e!.data.data, created.data);
  for (const s of [...open, again, theirs]) s.close();
});

test('the stream cap is shared by instances sharing a store (through Redis on PostgreSQL)', async (t) => {
  const DATABASE_URL = await freshDatabaseUrl(t);
  const shared = {
    DATABASE_URL,
    REDIS_KEY_PREFIX: `gma-test:${randomBytes(6).toString('hex')}:`,
    STREAMS_PER_CALLER: '2',
  };
  const a = await buildTestApp(t, shared);
  const b = await buildTestApp(t, shared);
  const admin = await createStaff(a, 'admin');
  const [urlA, urlB] = [await listen(a), await listen(b)];
  const first = await openStream(urlA, admin.token);
  const second = await openStream(urlB, admin.token);
  assert.deepEqual([first.status, second.status], [200, 200]);

  const third = await openStream(urlA, admin.token);
  if (TEST_STORE === 'postgres') {
    await third.ended;
    // With Redis every instance counts the same slots: the third, on A, is over the cap.
    assertCapped(third, 2);
    const fourth = await openStream(urlB, admin.token);
    await fourth.ended;
    assertCapped(fourth, 2);
    // A slot given back on B is free on A.
    second.close();
    await second.ended;
    let again = await openStream(urlA, admin.token);
    while (again.status === 429) again = await openStream(urlA, admin.token);
    assert.equal(again.status, 200);
    again.close();
  } else {
    // Without Redis each instance counts its own: A holds one, so a second on A is allowed.
    assert.equal(third.status, 200);
    third.close();
  }
  first.close();
  second.close();
  await b.close();
  await a.close();
});

test('a stream without a cursor replays nothing; after=0 replays what is kept', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const url = await listen(app);
  for (let i = 1; i <= 20; i++) await guest(app, admin.token, `Old ${i}`);

  const fresh = await openStream(url, admin.token);
  const everything = await openStream(`${url}?after=0`, admin.token);
  const kept = await everything.waitFor(20);
  assert.deepEqual(
    kept.map((e) => e.data.data.name),
    Array.from({ length: 20 }, (_, i) => `Old ${i + 1}`),
  );
  const next = await guest(app, admin.token, 'Next');
  const [first] = await fresh.waitFor(1);
  assert.deepEqual(first!.data.data, next.data, 'the first event a fresh stream gets is the next one');
  await everything.waitFor(21);
  assert.equal(fresh.events.length, 1);

  // The feed keeps its oldest-first default.
  const feed = await call(app, 'GET', '/events?limit=1', { token: admin.token });
  assert.equal(feed.data[0].data.name, 'Old 1');

  // A reconnect with Last-Event-ID gets every event after it, none before, none twice.
  fresh.close();
  await fresh.ended;
  const missed = [];
  for (let i = 1; i <= 5; i++) missed.push((await guest(app, admin.token, `Missed ${i}`)).data.name);
  const resumed = await openStream(url, admin.token, { 'last-event-id': first!.id });
  const got = await resumed.waitFor(5);
  assert.deepEqual(
    got.map((e) => e.data.data.name),
    missed,
  );
  resumed.close();
  everything.close();
});
