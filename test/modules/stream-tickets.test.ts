// Stream tickets (docs/events.md), over real HTTP: `POST /events/stream-tickets` gives a one-use,
// short-lived ticket bound to its caller and their access, and `GET /events/stream?ticket=` then
// needs no Authorization header (a browser's EventSource cannot send one). A used, unknown or
// expired ticket is 401 TOKEN_INVALID, also under a race and across instances sharing the store; a
// ticket of a caller who lost access opens nothing, and its open stream ends like any other; the
// stream's filters, cap and rate limit are the caller's; the ticket never reaches a log.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance } from 'fastify';
import {
  appWithLog,
  buildTestApp,
  call,
  createStaff,
  freshDatabaseUrl,
  freshPostgres,
  TEST_STORE,
} from '../helpers.js';
import { listen, openStream, type Stream } from './stream-helpers.js';

const TICKET = /^gmt_[A-Za-z0-9_-]{43}$/;

async function ticketFor(app: FastifyInstance, credential: string): Promise<string> {
  const res = await call(app, 'POST', '/events/stream-tickets', { token: credential });
  assert.equal(res.status, 201, res.raw.body);
  return res.data.ticket as string;
}

async function makeKey(app: FastifyInstance, token: string, scopes: string[] = ['events:read']) {
  const res = await call(app, 'POST', '/api-keys', { token, body: { name: 'Dashboard', scopes } });
  assert.equal(res.status, 201, res.raw.body);
  return res.data as { id: string; key: string };
}

/** The stream URL with these query parameters. */
const withQuery = (url: string, query: Record<string, string>) => `${url}?${new URLSearchParams(query)}`;

/** Opens the stream with a ticket and no Authorization header. */
const byTicket = (url: string, ticket: string, query: Record<string, string> = {}) =>
  openStream(withQuery(url, { ticket, ...query }), null);

/** The stream was refused with `status` and `code` in the envelope. */
async function refused(s: Stream, status: number, code: string): Promise<string> {
  await s.ended;
  assert.equal(s.status, status, s.body);
  const body = JSON.parse(s.body);
  assert.equal(body.success, false);
  assert.equal(body.error.code, code, s.body);
  return body.error.message as string;
}

async function closesWithin(s: Stream, ms: number) {
  const outcome = await Promise.race([s.ended.then(() => 'ended' as const), sleep(ms).then(() => 'open' as const)]);
  assert.equal(outcome, 'ended', `the stream was still open after ${ms} ms: ${s.body}`);
  assert.ok(s.complete, 'the server ended the response cleanly');
}

test('a ticket opens the stream without an Authorization header, and the stream delivers events', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const url = await listen(app);

  const before = Date.now();
  const res = await call(app, 'POST', '/events/stream-tickets', { token: admin.token });
  assert.equal(res.status, 201, res.raw.body);
  assert.match(res.data.ticket, TICKET);
  assert.equal(res.headers['cache-control'], 'no-store');
  const expiresAt = Date.parse(res.data.expiresAt);
  assert.ok(expiresAt >= before + 59_000 && expiresAt <= Date.now() + 60_000, res.data.expiresAt);

  const s = await byTicket(url, res.data.ticket);
  assert.equal(s.status, 200, s.body);
  assert.match(String(s.headers['content-type']), /text\/event-stream/);
  const created = await call(app, 'POST', '/guests', { token: admin.token, body: { name: 'Seen by ticket' } });
  const [e] = await s.waitFor(1);
  assert.equal(e!.data.type, 'guest.created');
  assert.deepEqual(e!.data.data, created.data);
  s.close();

  // An API key with events:read makes tickets too, and its ticket streams as the key.
  const { key } = await makeKey(app, admin.token);
  const k = await byTicket(url, await ticketFor(app, key));
  assert.equal(k.status, 200, k.body);
  await call(app, 'POST', '/guests', { token: admin.token, body: { name: 'Seen by the key' } });
  assert.equal((await k.waitFor(1))[0]!.data.data.name, 'Seen by the key');
  k.close();
});

test('a retry with the same Idempotency-Key answers the same ticket, which still opens one stream', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const url = await listen(app);
  const headers = { 'idempotency-key': 'ticket-retry-1' };
  const first = await call(app, 'POST', '/events/stream-tickets', { token: admin.token, headers });
  const again = await call(app, 'POST', '/events/stream-tickets', { token: admin.token, headers });
  assert.equal(first.status, 201, first.raw.body);
  assert.equal(again.status, 201, again.raw.body);
  assert.equal(again.headers['idempotent-replayed'], 'true');
  assert.equal(again.headers['cache-control'], 'no-store');
  assert.equal(again.data.ticket, first.data.ticket);
  const s = await byTicket(url, again.data.ticket);
  assert.equal(s.status, 200, s.body);
  s.close();
  await refused(await byTicket(url, first.data.ticket), 401, 'TOKEN_INVALID');
});

test('a ticket opens one stream: a second use, or an unknown ticket, is 401 TOKEN_INVALID', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const url = await listen(app);
  const ticket = await ticketFor(app, admin.token);
  const first = await byTicket(url, ticket);
  assert.equal(first.status, 200, first.body);

  const second = await byTicket(url, ticket);
  assert.match(await refused(second, 401, 'TOKEN_INVALID'), /unknown or already used/);
  assert.match(String(second.headers['www-authenticate']), /invalid_token/);
  // Used, not cancelled: the first stream carries on.
  await call(app, 'POST', '/guests', { token: admin.token, body: { name: 'Still streaming' } });
  await first.waitFor(1);
  first.close();

  await refused(await byTicket(url, `gmt_${randomBytes(32).toString('base64url')}`), 401, 'TOKEN_INVALID');
  assert.match(await refused(await byTicket(url, 'not-a-ticket'), 401, 'TOKEN_INVALID'), /malformed/);
});

test('of two requests racing with one ticket, exactly one opens the stream', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const url = await listen(app);
  for (let round = 0; round < 5; round++) {
    const ticket = await ticketFor(app, admin.token);
    const streams = await Promise.all([byTicket(url, ticket), byTicket(url, ticket), byTicket(url, ticket)]);
    assert.deepEqual(streams.map((s) => s.status).sort(), [200, 401, 401], streams.map((s) => s.body).join('\n'));
    for (const s of streams) s.close();
  }
});

test('an expired ticket is 401 TOKEN_INVALID', async (t) => {
  const app = await buildTestApp(t, {}, { eventStreams: { ticketTtlMs: 200 } });
  const admin = await createStaff(app, 'admin');
  const url = await listen(app);
  const res = await call(app, 'POST', '/events/stream-tickets', { token: admin.token });
  assert.ok(Date.parse(res.data.expiresAt) <= Date.now() + 200, res.data.expiresAt);
  await sleep(300);
  assert.match(await refused(await byTicket(url, res.data.ticket), 401, 'TOKEN_INVALID'), /expired/);
});

test('a key needs events:read to make a ticket; nobody makes one without a credential', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const { key } = await makeKey(app, admin.token, ['guests:read']);
  const res = await call(app, 'POST', '/events/stream-tickets', { token: key });
  assert.equal(res.status, 403, res.raw.body);
  assert.equal(res.body.error.details.requiredScope, 'events:read');
  const anonymous = await call(app, 'POST', '/events/stream-tickets');
  assert.equal(anonymous.status, 401);
  assert.equal(anonymous.body.error.code, 'TOKEN_MISSING');
});

test('a ticket whose key was revoked, or whose token was logged out, since it was made opens nothing', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const member = await createStaff(app, 'manager');
  const leaver = await createStaff(app, 'manager');
  const url = await listen(app);
  const { id, key } = await makeKey(app, admin.token);
  const narrowed = await makeKey(app, admin.token);
  const keyTicket = await ticketFor(app, key);
  const narrowedTicket = await ticketFor(app, narrowed.key);
  const memberTicket = await ticketFor(app, member.token);
  const leaverTicket = await ticketFor(app, leaver.token);

  assert.equal((await call(app, 'DELETE', `/api-keys/${id}`, { token: admin.token })).status, 200);
  const patched = await call(app, 'PATCH', `/api-keys/${narrowed.id}`, {
    token: admin.token,
    body: { scopes: ['guests:read'] },
  });
  assert.equal(patched.status, 200, patched.raw.body);
  assert.equal((await call(app, 'POST', '/auth/logout', { token: member.token })).status, 200);
  const off = await call(app, 'PATCH', `/staff/${leaver.id}`, { token: admin.token, body: { active: false } });
  assert.equal(off.status, 200, off.raw.body);

  assert.match(await refused(await byTicket(url, keyTicket), 401, 'TOKEN_INVALID'), /revoked/);
  await refused(await byTicket(url, narrowedTicket), 403, 'FORBIDDEN');
  assert.match(await refused(await byTicket(url, memberTicket), 401, 'TOKEN_INVALID'), /revoked/);
  await refused(await byTicket(url, leaverTicket), 401, 'UNAUTHORIZED');
});

test('an open ticket stream ends when its caller loses access', async (t) => {
  const app = await buildTestApp(t, {}, { eventStreams: { accessCheckMs: 400 } });
  const admin = await createStaff(app, 'admin');
  const member = await createStaff(app, 'manager');
  const url = await listen(app);
  const { id, key } = await makeKey(app, admin.token);
  const keyStream = await byTicket(url, await ticketFor(app, key));
  const memberStream = await byTicket(url, await ticketFor(app, member.token));
  const adminStream = await byTicket(url, await ticketFor(app, admin.token));
  for (const s of [keyStream, memberStream, adminStream]) assert.equal(s.status, 200, s.body);

  assert.equal((await call(app, 'DELETE', `/api-keys/${id}`, { token: admin.token })).status, 200);
  assert.equal((await call(app, 'POST', '/auth/logout', { token: member.token })).status, 200);
  await closesWithin(keyStream, 5_000);
  await closesWithin(memberStream, 5_000);
  // Nobody else's: the admin's ticket stream still carries events.
  await call(app, 'POST', '/guests', { token: admin.token, body: { name: 'After the others left' } });
  assert.equal((await adminStream.waitFor(1))[0]!.data.data.name, 'After the others left');
  adminStream.close();
});

test('a ticket stream has the caller’s filters: `types`, and a staff member sees only their own', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const member = await createStaff(app, 'staff');
  const url = await listen(app);
  const own = await byTicket(url, await ticketFor(app, member.token));
  const typed = await byTicket(url, await ticketFor(app, admin.token), { types: 'task.created' });

  await call(app, 'POST', '/guests', { token: admin.token, body: { name: 'Not for the member' } });
  const task = await call(app, 'POST', '/tasks', {
    token: admin.token,
    body: { title: 'Towels to 412', department: 'housekeeping', assignee: member.id },
  });
  assert.equal(task.status, 201, task.raw.body);
  const [mine] = await own.waitFor(1);
  assert.equal(mine!.data.type, 'task.created');
  assert.equal(mine!.data.data.id, task.data.id);
  const [only] = await typed.waitFor(1);
  assert.equal(only!.data.type, 'task.created');
  await sleep(100);
  assert.equal(own.events.length, 1, own.body);
  assert.equal(typed.events.length, 1, typed.body);
  own.close();
  typed.close();
});

test('a ticket is read only by GET /events/stream: elsewhere it is no credential', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const url = await listen(app);
  const ticket = await ticketFor(app, admin.token);
  const feed = await call(app, 'GET', `/events?ticket=${ticket}`);
  assert.equal(feed.status, 401, feed.raw.body);
  assert.equal(feed.body.error.code, 'TOKEN_MISSING');
  // Not spent there: it still opens the stream.
  const s = await byTicket(url, ticket);
  assert.equal(s.status, 200, s.body);
  s.close();
});

test('ticket streams count towards STREAMS_PER_CALLER, and making tickets towards the rate limit', async (t) => {
  const app = await buildTestApp(t, { STREAMS_PER_CALLER: '1', RATE_LIMIT_STANDARD: '4' });
  const admin = await createStaff(app, 'admin');
  const url = await listen(app);
  const header = await openStream(url, admin.token);
  assert.equal(header.status, 200, header.body);
  const capped = await byTicket(url, await ticketFor(app, admin.token));
  assert.match(await refused(capped, 429, 'RATE_LIMITED'), /At most 1 event streams/);
  header.close();

  // Two requests counted so far (a ticket and the stream it opened); the standard bucket holds 4.
  const third = await call(app, 'POST', '/events/stream-tickets', { token: admin.token });
  assert.equal(third.status, 201, third.raw.body);
  assert.equal(third.headers['x-ratelimit-remaining'], '0');
  const over = await call(app, 'POST', '/events/stream-tickets', { token: admin.token });
  assert.equal(over.status, 429, over.raw.body);
});

test('a ticket made on one instance opens a stream once on another sharing the store', async (t) => {
  const shared = {
    DATABASE_URL: TEST_STORE === 'postgres' ? await freshPostgres(t, { migrated: true }) : await freshDatabaseUrl(t),
    REDIS_KEY_PREFIX: `gma-test:${randomBytes(6).toString('hex')}:`,
  };
  const a = await buildTestApp(t, shared);
  const b = await buildTestApp(t, shared);
  t.after(async () => {
    await b.close();
    await a.close();
  });
  const admin = await createStaff(a, 'admin');
  const urlA = await listen(a);
  const urlB = await listen(b);
  const ticket = await ticketFor(a, admin.token);
  const s = await byTicket(urlB, ticket);
  assert.equal(s.status, 200, s.body);
  await refused(await byTicket(urlA, ticket), 401, 'TOKEN_INVALID');
  await refused(await byTicket(urlB, ticket), 401, 'TOKEN_INVALID');
  await call(a, 'POST', '/guests', { token: admin.token, body: { name: 'Made on A' } });
  assert.equal((await s.waitFor(1))[0]!.data.data.name, 'Made on A');
  s.close();
});

test('a ticket never reaches the logs: its query parameter is redacted from request lines', async (t) => {
  const { app, lines } = await appWithLog(t, 'info');
  const admin = await createStaff(app, 'admin');
  const url = await listen(app);
  const ticket = await ticketFor(app, admin.token);
  const s = await byTicket(url, ticket, { types: 'guest.created' });
  assert.equal(s.status, 200, s.body);
  s.close();
  await s.ended;
  await refused(await byTicket(url, ticket), 401, 'TOKEN_INVALID');
  await refused(
    await openStream(`${url}?types=guest.created&ticket=${ticket}&ticket=${ticket}`, null),
    401,
    'TOKEN_INVALID',
  );

  const text = JSON.stringify(lines);
  assert.ok(!text.includes(ticket.slice(4)), 'the ticket is in a log line');
  const urls = lines.flatMap((l) => {
    const req = l.req as { url?: string } | undefined;
    return req?.url?.startsWith('/api/v1/events/stream?') ? [req.url] : [];
  });
  assert.ok(urls.length >= 3, text);
  for (const u of urls) assert.match(u, /ticket=\[redacted\]/);
  assert.ok(
    urls.some((u) => u.includes('types=guest.created')),
    'the rest of the URL is kept',
  );
});

test('the document describes making a ticket and streaming with one', async (t) => {
  const app = await buildTestApp(t);
  // biome-ignore lint/suspicious/noExplicitAny: the document, read field by field.
  const doc = (await call(app, 'GET', '/api/v1/openapi.json')).body as any;
  const make = doc.paths['/api/v1/events/stream-tickets'].post;
  assert.equal(make.operationId, 'createStreamTicket');
  assert.deepEqual(make.security, [{ bearerAuth: [] }, { apiKeyAuth: [] }]);
  assert.deepEqual(make['x-scopes'], ['events:read']);
  const created = make.responses['201'];
  assert.match(created.description, /ticket/i);
  const example = created.content['application/json'].example;
  assert.match(example.data.ticket, TICKET);
  assert.ok(!Number.isNaN(Date.parse(example.data.expiresAt)));
  assert.ok(created.headers['Cache-Control'], 'Cache-Control: no-store is documented');
  for (const code of ['401', '403', '429', '500', '503']) assert.ok(make.responses[code], `${code} documented`);

  const stream = doc.paths['/api/v1/events/stream'].get;
  assert.deepEqual(stream.security, [{ bearerAuth: [] }, { apiKeyAuth: [] }, { streamTicket: [] }]);
  // The `ticket` query parameter is a credential: OpenAPI documents it as a security scheme (an
  // apiKey in the query), and the operation's own parameters leave it out.
  const scheme = doc.components.securitySchemes.streamTicket;
  assert.deepEqual([scheme.type, scheme.in, scheme.name], ['apiKey', 'query', 'ticket']);
  assert.match(scheme.description, /POST \/events\/stream-tickets/);
  assert.match(scheme.description, /one stream within 60 s/);
  assert.match(stream.description, /`ticket`/);
  assert.match(stream.responses['401'].description, /ticket/);
});
