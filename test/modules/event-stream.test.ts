// The live stream over real HTTP: Server-Sent Events with an id per event, the same role and type
// filters as the feed, resumable with Last-Event-ID, heartbeats, fed across instances sharing a
// store, and ended cleanly by app.close().
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { get } from 'node:http';
import { connect } from 'node:net';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance } from 'fastify';
import { buildTestApp, call, createStaff, freshDatabaseUrl, TEST_STORE } from '../helpers.js';
import { listen, openStream } from './stream-helpers.js';

const guest = (app: FastifyInstance, token: string, name: string) =>
  call(app, 'POST', '/guests', { token, body: { name } });

test('the stream delivers a change as an SSE event and resumes after Last-Event-ID', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const url = await listen(app);
  await guest(app, admin.token, 'Before');

  const s = await openStream(url, admin.token);
  assert.equal(s.status, 200);
  assert.match(String(s.headers['content-type']), /^text\/event-stream/);
  assert.ok(s.headers['x-ratelimit-limit'], 'the gate headers are kept');
  assert.ok(s.headers['x-request-id']);
  const created = await guest(app, admin.token, 'Live');
  const [live] = await s.waitFor(1);
  assert.equal(s.events.length, 1, 'without a cursor the stream starts at the newest event: nothing before it');
  assert.equal(live!.data.type, 'guest.created');
  assert.deepEqual(live!.data.data, created.data);
  assert.equal(live!.id, live!.data.id);
  s.close();
  await s.ended;

  // Missed while disconnected: a reconnect with Last-Event-ID gets exactly those, in order.
  await guest(app, admin.token, 'Missed 1');
  await guest(app, admin.token, 'Missed 2');
  const resumed = await openStream(url, admin.token, { 'last-event-id': live!.id });
  const got = await resumed.waitFor(2);
  assert.deepEqual(
    got.map((e) => e.data.data.name),
    ['Missed 1', 'Missed 2'],
  );
  await guest(app, admin.token, 'After');
  await resumed.waitFor(3);
  assert.deepEqual(
    resumed.events.map((e) => e.data.data.name),
    ['Missed 1', 'Missed 2', 'After'],
  );
  const ids = resumed.events.map((e) => Number(e.id));
  assert.deepEqual(
    ids,
    [...ids].sort((a, b) => a - b),
  );

  // ?after= does the same for a first connection; Last-Event-ID wins over it.
  const fromQuery = await openStream(`${url}?after=${got[1]!.id}`, admin.token);
  assert.deepEqual(
    (await fromQuery.waitFor(1)).map((e) => e.data.data.name),
    ['After'],
  );
});

test('the stream applies the staff filter and the types filter', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const staff = await createStaff(app, 'staff');
  const url = await listen(app);
  const mine = await openStream(url, staff.token);
  const tasksOnly = await openStream(`${url}?types=task.created`, admin.token);

  const g = await guest(app, admin.token, 'Filtered');
  await call(app, 'POST', '/tasks', {
    token: admin.token,
    body: { title: 'Not mine', department: 'housekeeping' },
  });
  const cnv = await call(app, 'POST', '/conversations', {
    token: admin.token,
    body: { guestId: g.data.id, channel: 'web', assignee: staff.id },
  });
  await call(app, 'POST', '/tasks', {
    token: admin.token,
    body: { title: 'Mine', department: 'housekeeping', assignee: staff.id },
  });

  const seen = await mine.waitFor(2);
  assert.deepEqual(
    seen.map((e) => [e.data.type, e.data.data.id]),
    [
      ['conversation.created', cnv.data.id],
      ['task.created', seen[1]!.data.data.id],
    ],
  );
  assert.equal(seen[1]!.data.data.title, 'Mine');
  const tasks = await tasksOnly.waitFor(2);
  assert.deepEqual(
    tasks.map((e) => e.data.data.title),
    ['Not mine', 'Mine'],
  );
  await sleep(100);
  assert.equal(mine.events.length, 2);
  assert.equal(tasksOnly.events.length, 2);
});

test('events committed together reach each stream once, in order, filtered within the batch', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const staff = await createStaff(app, 'staff');
  const manager = await createStaff(app, 'manager');
  const url = await listen(app);
  const all = await openStream(url, admin.token);
  const mine = await openStream(url, staff.token);
  const none = await openStream(`${url}?types=task.deleted`, admin.token);

  // Five tasks, the staff member's first, middle and last rows in or out of what they may see:
  // whether the hub reads them in one batch or several, each stream gets its own, once, in order.
  const owners = [null, staff.id, null, staff.id, staff.id];
  const bulk = await call(app, 'POST', '/tasks/bulk', {
    token: manager.token,
    body: { items: owners.map((assignee, i) => ({ title: `Batch ${i}`, department: 'housekeeping', assignee })) },
  });
  assert.equal(bulk.status, 200, JSON.stringify(bulk.body));

  const everything = await all.waitFor(5);
  assert.deepEqual(
    everything.map((e) => e.data.data.title),
    owners.map((_, i) => `Batch ${i}`),
  );
  const ids = everything.map((e) => Number(e.id));
  assert.deepEqual(
    ids,
    [...ids].sort((a, b) => a - b),
  );
  const seen = await mine.waitFor(3);
  assert.deepEqual(
    seen.map((e) => e.data.data.title),
    ['Batch 1', 'Batch 3', 'Batch 4'],
  );
  await sleep(100);
  assert.equal(all.events.length, 5);
  assert.equal(mine.events.length, 3);
  assert.equal(none.events.length, 0);

  // A stream catching up reads the five from the table in one batch, and filters it the same way.
  const after = ids[0]! - 1;
  const caughtUp = await openStream(`${url}?after=${after}`, staff.token);
  assert.deepEqual(
    (await caughtUp.waitFor(3)).map((e) => e.data.data.title),
    ['Batch 1', 'Batch 3', 'Batch 4'],
  );
  const caughtUpAll = await openStream(`${url}?after=${after}`, admin.token);
  assert.deepEqual(
    (await caughtUpAll.waitFor(5)).map((e) => e.id),
    everything.map((e) => e.id),
  );
  await sleep(100);
  assert.equal(caughtUp.events.length, 3);
  assert.equal(caughtUpAll.events.length, 5);
});

test('bad requests are answered in the envelope before any stream starts', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const url = await listen(app);
  const cases: [string, string | null, Record<string, string>, number][] = [
    [url, null, {}, 401],
    [`${url}?types=guest.vanished`, admin.token, {}, 400],
    [`${url}?after=x`, admin.token, {}, 400],
    [url, admin.token, { 'last-event-id': 'yesterday' }, 400],
  ];
  for (const [u, token, headers, status] of cases) {
    const s = await openStream(u, token, headers);
    await s.ended;
    assert.equal(s.status, status, `${u} ${JSON.stringify(headers)}`);
    assert.match(String(s.headers['content-type']), /application\/json/);
    assert.equal(JSON.parse(s.body).success, false);
  }
});

test('heartbeats keep an idle stream open, and app.close() ends open streams', async (t) => {
  const app = await buildTestApp(t, { EVENT_STREAM_HEARTBEAT_MS: '50' });
  const admin = await createStaff(app, 'admin');
  const url = await listen(app);
  const s = await openStream(url, admin.token);
  await sleep(300);
  assert.ok(s.comments.filter((c) => c === ': heartbeat').length >= 3, s.body);

  const started = Date.now();
  await app.close();
  await s.ended;
  assert.ok(Date.now() - started < 2000, 'close does not wait for open streams');
});

test('app.close() also ends streams that were still being opened when it began', async (t) => {
  // Requests in flight when close begins: some have passed the gate and subscribe only after the
  // open streams were ended. Each must still end, or the server (and its process) never finishes
  // closing. Close is begun at several moments to meet requests at every step of opening.
  for (const delayMs of [0, 1, 2, 4, 8, 16]) {
    const app = await buildTestApp(t);
    const admin = await createStaff(app, 'admin');
    const url = await listen(app);
    const ends: Promise<string>[] = [];
    for (let i = 0; i < 20; i++) {
      ends.push(
        new Promise<string>((resolve) => {
          const headers = { accept: 'text/event-stream', authorization: `Bearer ${admin.token}` };
          const req = get(url, { headers });
          req.on('response', (res) => {
            res.resume();
            res.on('close', () => resolve(`ended ${res.statusCode}`));
          });
          req.on('error', (err) => resolve(`refused ${err.message}`));
        }),
      );
    }
    await sleep(delayMs);
    const closed = app.close();
    const timeout = sleep(5000).then(() => `still open 5 s after close began (close ${delayMs} ms after the requests)`);
    const outcomes = await Promise.all(ends.map((e) => Promise.race([e, timeout])));
    assert.deepEqual(
      outcomes.filter((o) => o.startsWith('still open')),
      [],
      outcomes.join('\n'),
    );
    await closed;
  }
});

test('a change made on one instance reaches a stream open on another instance sharing the store', async (t) => {
  const DATABASE_URL = await freshDatabaseUrl(t);
  const prefix = `gma-test:${randomBytes(6).toString('hex')}:`;
  // On PostgreSQL + Redis the reader polls only every minute, so a prompt arrival shows the Redis
  // wake-up at work; on SQLite (no Redis) it polls often.
  const shared = { DATABASE_URL, REDIS_KEY_PREFIX: prefix };
  const writer = await buildTestApp(t, shared);
  const reader = await buildTestApp(t, {
    ...shared,
    EVENT_POLL_INTERVAL_MS: TEST_STORE === 'postgres' ? '60000' : '50',
  });
  const admin = await createStaff(writer, 'admin');
  const url = await listen(reader);
  const s = await openStream(url, admin.token);
  await sleep(100);

  const started = Date.now();
  await guest(writer, admin.token, 'Elsewhere');
  const [e] = await s.waitFor(1, 3000);
  assert.equal(e!.data.data.name, 'Elsewhere');
  assert.ok(Date.now() - started < 2000);
  // Before the shared store is removed (its clean-up was registered first).
  await reader.close();
  await writer.close();
});

/** Sends raw request bytes on one connection and collects what comes back until `until` matches. */
async function rawExchange(url: string, bytes: string, until: RegExp): Promise<string> {
  const { port } = new URL(url);
  const socket = connect(Number(port), '127.0.0.1');
  socket.setEncoding('latin1');
  let got = '';
  socket.on('data', (d: string) => {
    got += d;
  });
  socket.write(bytes);
  const deadline = Date.now() + 5000;
  while (!until.test(got) && Date.now() < deadline) await sleep(20);
  socket.destroy();
  return got;
}

test('frames reach HTTP/1.0 clients unchunked and a pipelined stream request once its turn comes', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const url = await listen(app);
  const path = new URL(url).pathname;
  const auth = `Authorization: Bearer ${admin.token}\r\n`;

  // HTTP/1.0 has no chunked encoding: the body is the SSE text itself, ended by the close.
  const old = rawExchange(url, `GET ${path} HTTP/1.0\r\n${auth}\r\n`, /data: .*Old client/);
  await sleep(300);
  await guest(app, admin.token, 'Old client');
  const head10 = await old;
  assert.match(head10, /^HTTP\/1\.1 200/);
  assert.doesNotMatch(head10, /transfer-encoding: chunked/i);
  const body10 = head10.slice(head10.indexOf('\r\n\r\n') + 4);
  assert.match(body10, /^retry: 3000\n\nid: \d+\ndata: \{.*"Old client".*\}\n\n/s);

  // Pipelined behind another request on the same connection: the stream's head and frames follow
  // the first answer, chunk-framed, in order.
  const piped = rawExchange(
    url,
    `GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET ${path} HTTP/1.1\r\nHost: x\r\n${auth}\r\n`,
    /Piped[^\r]*\r\n/,
  );
  await sleep(300);
  await guest(app, admin.token, 'Piped');
  const text = await piped;
  const second = text.indexOf('HTTP/1.1 200', 1);
  assert.ok(second > 0, 'two answers on the connection');
  const streamPart = text.slice(second);
  assert.match(streamPart, /transfer-encoding: chunked/i);
  const body = streamPart.slice(streamPart.indexOf('\r\n\r\n') + 4);
  // Each chunk: its size in hex, CRLF, exactly that many bytes, CRLF.
  const frames: string[] = [];
  let rest = body;
  while (rest.length > 0) {
    const m = /^([0-9a-f]+)\r\n/.exec(rest);
    if (m === null) break;
    const size = Number.parseInt(m[1]!, 16);
    const chunk = rest.slice(m[0].length, m[0].length + size);
    if (chunk.length < size) break;
    assert.equal(rest.slice(m[0].length + size, m[0].length + size + 2), '\r\n');
    frames.push(Buffer.from(chunk, 'latin1').toString('utf8'));
    rest = rest.slice(m[0].length + size + 2);
  }
  assert.equal(frames[0], 'retry: 3000\n\n');
  assert.ok(
    frames.some((f) => /^id: \d+\ndata: \{.*"Piped".*\}\n\n$/s.test(f)),
    'the event arrives as one chunk',
  );
});
