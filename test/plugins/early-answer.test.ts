// A cached page is answered before routing (src/plugins/read-cache.ts, `answer`), by the HTTP
// server itself, so these tests talk to a listening server over real sockets: inject() goes
// straight to Fastify and never meets that path. They check that an early answer is the answer the
// full path gives: same bytes and headers, each request counted, the limit enforced, a token
// refused the moment it is revoked or its holder demoted or deactivated (here or by another
// instance), each caller's own page, and the same request-log lines. On PostgreSQL nothing is
// cached and every request takes the full path; the same assertions hold.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { appWithLog, buildTestApp, call, createStaff, freshDatabaseUrl, type LogLine, TEST_STORE } from '../helpers.js';

async function listening(app: FastifyInstance): Promise<string> {
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address();
  assert.ok(address !== null && typeof address === 'object');
  return `http://127.0.0.1:${address.port}/api/v1`;
}

interface Got {
  status: number;
  headers: Headers;
  text: string;
  // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary JSON bodies.
  body: any;
}

async function get(base: string, path: string, token: string, headers: Record<string, string> = {}): Promise<Got> {
  const res = await fetch(`${base}${path}`, { headers: { authorization: `Bearer ${token}`, ...headers } });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, body: JSON.parse(text) };
}

/** Asks until the page is surely kept (the first answer fills the cache), returning the last. */
async function warm(base: string, path: string, token: string): Promise<Got> {
  let last: Got | undefined;
  for (let i = 0; i < 3; i++) {
    last = await get(base, path, token);
    assert.equal(last.status, 200, last.text);
  }
  return last!;
}

test('a repeated page over the network: same bytes, every header, each request counted, writes seen at once', async (t) => {
  const app = await buildTestApp(t, { RATE_LIMIT_STANDARD: '1000' });
  const base = await listening(app);
  const admin = await createStaff(app, 'admin');
  const guest = await call(app, 'POST', '/guests', { token: admin.token, body: { name: 'Early Guest' } });
  const path = '/conversations?status=open&limit=20';
  const first = await warm(base, path, admin.token);
  const next = await get(base, path, admin.token, { 'x-request-id': 'poll-7' });
  assert.equal(next.status, 200);
  assert.equal(next.text, first.text);
  assert.equal(next.headers.get('content-type'), 'application/json; charset=utf-8');
  assert.equal(next.headers.get('content-length'), String(Buffer.byteLength(first.text)));
  assert.equal(next.headers.get('x-request-id'), 'poll-7');
  assert.equal(next.headers.get('x-ratelimit-limit'), '1000');
  assert.equal(
    Number(next.headers.get('x-ratelimit-remaining')),
    Number(first.headers.get('x-ratelimit-remaining')) - 1,
  );
  assert.equal(next.headers.get('x-ratelimit-reset'), first.headers.get('x-ratelimit-reset'));
  const ids = new Set([first, next, await get(base, path, admin.token)].map((r) => r.headers.get('x-request-id')));
  assert.equal(ids.size, 3, 'a new request id for each request that sends none');

  // A write shows on the very next request.
  const cnv = await call(app, 'POST', '/conversations', {
    token: admin.token,
    body: { guestId: guest.data.id, channel: 'web' },
  });
  const after = await get(base, path, admin.token);
  assert.deepEqual(
    after.body.data.map((c: { id: string }) => c.id),
    [cnv.data.id],
  );
  // What the full path answers for the same request, byte for byte.
  const full = await call(app, 'GET', path, { token: admin.token, headers: { 'cache-control': 'no-cache' } });
  assert.equal((await get(base, path, admin.token)).text, full.raw.body);
});

test('past the limit a cached page is refused 429 in the envelope, like any request', async (t) => {
  const app = await buildTestApp(t, { RATE_LIMIT_STANDARD: '4' });
  const base = await listening(app);
  const admin = await createStaff(app, 'admin');
  const remaining: number[] = [];
  for (let i = 0; i < 4; i++) {
    const ok = await get(base, '/guests', admin.token);
    assert.equal(ok.status, 200, ok.text);
    remaining.push(Number(ok.headers.get('x-ratelimit-remaining')));
  }
  assert.deepEqual(remaining, [3, 2, 1, 0]);
  const refused = await get(base, '/guests', admin.token);
  assert.equal(refused.status, 429);
  assert.equal(refused.body.error.code, 'RATE_LIMITED');
  assert.ok(Number(refused.headers.get('retry-after')) >= 1);
  assert.equal(refused.headers.get('x-ratelimit-remaining'), '0');
});

test('a token ends at once: logout here, deactivation and demotion by another instance', async (t) => {
  const env = { DATABASE_URL: await freshDatabaseUrl(t), RATE_LIMIT_STANDARD: '1000' };
  const a = await buildTestApp(t, env);
  const b = await buildTestApp(t, env);
  const base = await listening(a);
  const admin = await createStaff(a, 'admin');
  const manager = await createStaff(a, 'manager');
  const staff = await createStaff(a, 'staff');
  const leaving = await createStaff(a, 'staff');

  await warm(base, '/guests', leaving.token);
  assert.equal((await call(a, 'POST', '/auth/logout', { token: leaving.token })).status, 200);
  // Twice: the second request finds the revoked row kept since the first.
  for (let i = 0; i < 2; i++) {
    const afterLogout = await get(base, '/guests', leaving.token);
    assert.equal(afterLogout.status, 401);
    assert.equal(afterLogout.body.error.code, 'TOKEN_INVALID');
  }

  await warm(base, '/guests', staff.token);
  const off = await call(b, 'PATCH', `/staff/${staff.id}`, { token: admin.token, body: { active: false } });
  assert.equal(off.status, 200, off.raw.body);
  for (let i = 0; i < 2; i++) {
    const afterDeactivation = await get(base, '/guests', staff.token);
    assert.equal(afterDeactivation.status, 401);
    assert.equal(afterDeactivation.body.error.code, 'UNAUTHORIZED');
  }

  // Staff see only their own conversations: the manager's page changes with the demotion.
  const guest = await call(a, 'POST', '/guests', { token: admin.token, body: { name: 'Demotion Guest' } });
  await call(a, 'POST', '/conversations', { token: admin.token, body: { guestId: guest.data.id, channel: 'sms' } });
  assert.equal((await warm(base, '/conversations', manager.token)).body.meta.total, 1);
  const demoted = await call(b, 'PATCH', `/staff/${manager.id}`, { token: admin.token, body: { role: 'staff' } });
  assert.equal(demoted.status, 200, demoted.raw.body);
  for (let i = 0; i < 2; i++) assert.equal((await get(base, '/conversations', manager.token)).body.meta.total, 0);

  // A token that does not verify never gets a page.
  const forged = await get(base, '/guests', `${admin.token.slice(0, -2)}xx`);
  assert.equal(forged.status, 401);
});

test('each caller gets their own page over the network', async (t) => {
  const app = await buildTestApp(t, { RATE_LIMIT_STANDARD: '1000' });
  const base = await listening(app);
  const admin = await createStaff(app, 'admin');
  const ann = await createStaff(app, 'staff');
  const bob = await createStaff(app, 'staff');
  const guest = await call(app, 'POST', '/guests', { token: admin.token, body: { name: 'Own Page Guest' } });
  const cnv = await call(app, 'POST', '/conversations', {
    token: admin.token,
    body: { guestId: guest.data.id, channel: 'sms', assignee: ann.id },
  });
  const ids = async (token: string) =>
    (await warm(base, '/conversations', token)).body.data.map((c: { id: string }) => c.id);
  assert.deepEqual(await ids(ann.token), [cnv.data.id]);
  assert.deepEqual(await ids(bob.token), []);
  assert.deepEqual(await ids(admin.token), [cnv.data.id]);
  assert.deepEqual(await ids(bob.token), []);
});

test('at info, a cached page writes the same request lines as the full path, with its reqId', async (t) => {
  const env: Record<string, string> = TEST_STORE === 'postgres' ? { DATABASE_URL: await freshDatabaseUrl(t) } : {};
  const { app, lines } = await appWithLog(t, 'info', env);
  const base = await listening(app);
  const admin = await createStaff(app, 'admin');
  for (const id of ['full-1', 'early-2', 'early-3']) {
    const res = await get(base, '/guests', admin.token, { 'x-request-id': id });
    assert.equal(res.status, 200);
  }
  // The first request ran the full path (nothing kept yet); the later ones could be answered early.
  const of = (id: string): LogLine[] => lines.filter((l) => l.reqId === id);
  const full = of('full-1');
  assert.deepEqual(
    full.map((l) => l.msg),
    ['incoming request', 'request completed'],
  );
  for (const id of ['early-2', 'early-3']) {
    const mine = of(id);
    assert.deepEqual(
      mine.map((l) => l.msg),
      ['incoming request', 'request completed'],
    );
    const req = mine[0]!.req as Record<string, unknown>;
    assert.deepEqual(req, { ...(full[0]!.req as Record<string, unknown>), remotePort: req.remotePort });
    assert.deepEqual(mine[1]!.res, { statusCode: 200 });
    assert.equal(typeof mine[1]!.responseTime, 'number');
  }
});
