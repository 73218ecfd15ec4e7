// Tests the conversation list's page cache (src/lib/page-cache.ts, docs/decisions.md) through HTTP on
// whichever store is under test: a kept page is answered byte for byte as a fresh read would be, and
// never once anything committed (through this app, another connection or another instance), once an
// SLA moment of its rows has passed, or to a caller who may not see its rows.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { assertError, insertConversation, insertGuest, openConversation } from '../fixtures.js';
import { buildTestApp, call, createStaff, freshDatabaseUrl, type Res } from '../helpers.js';

const LIST = '/conversations?status=open&limit=2';

/**
 * The same list until one answer comes from the cache (the third, unless something committed in
 * between: on PostgreSQL the snapshot is the server's, moved by other databases' commits too).
 */
async function untilKept(app: FastifyInstance, token: string, url = LIST): Promise<Res[]> {
  const out: Res[] = [];
  const hits = app.ctx.pageCache!.size().hits;
  while (app.ctx.pageCache!.size().hits === hits) {
    assert.ok(out.length < 30, 'a page asked again and again is kept');
    const res = await call(app, 'GET', url, { token });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    out.push(res);
  }
  return out;
}

const ids = (res: Res) => res.data.map((c: { id: string }) => c.id);

test('a kept page is the fresh answer, with its own headers, until a write through the API', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const made = [];
  for (const name of ['Ana', 'Ben', 'Cy']) {
    made.push(await openConversation(app, admin.token, { guestId: await insertGuest(app, name), channel: 'web' }));
  }
  const answers = await untilKept(app, admin.token);
  const [a, b, c] = [answers[0]!, answers.at(-2)!, answers.at(-1)!];
  assert.equal(app.ctx.pageCache!.size().entries, 1);
  assert.equal(c.raw.body, a.raw.body);
  assert.deepEqual(ids(c), [made[2].id, made[1].id]);
  // Per request still: its id, its rate-limit count, the Link to the next page; lists carry no ETag.
  assert.notEqual(c.headers['x-request-id'], b.headers['x-request-id']);
  assert.equal(Number(c.headers['x-ratelimit-remaining']), Number(b.headers['x-ratelimit-remaining']) - 1);
  assert.equal(c.headers.link, a.headers.link);
  assert.match(String(c.headers.link), /^<\/api\/v1\/conversations\?status=open&limit=2&cursor=[^>]+>; rel="next"$/);
  assert.equal(c.headers.etag, undefined);
  // The Link's page, read by cursor, is kept too.
  const next = String(c.headers.link).slice(1, String(c.headers.link).indexOf('>'));
  const walked = await untilKept(app, admin.token, next);
  assert.deepEqual(ids(walked.at(-1)!), [made[0].id]);

  // A write through the API: the next read is fresh.
  const one = `/conversations/${made[2].id}`;
  const etag = (await call(app, 'GET', one, { token: admin.token })).headers.etag as string;
  assert.equal((await call(app, 'GET', one, { token: admin.token, headers: { 'if-none-match': etag } })).status, 304);
  const closed = await call(app, 'PATCH', one, { token: admin.token, body: { status: 'closed' } });
  assert.equal(closed.status, 200);
  assert.notEqual(closed.headers.etag, etag);
  assert.deepEqual(ids(await call(app, 'GET', LIST, { token: admin.token })), [made[1].id, made[0].id]);
  assert.equal((await call(app, 'GET', one, { token: admin.token, headers: { 'if-none-match': etag } })).status, 200);

  // A write by the store's own connection outside any route (a job, the CLI) is seen as well.
  await untilKept(app, admin.token);
  const late = await insertConversation(app, await insertGuest(app, 'Di'));
  assert.deepEqual(ids(await call(app, 'GET', LIST, { token: admin.token })), [late, made[1].id]);
});

test('a write by another instance on the same store is seen by the next list', async (t) => {
  const env = { DATABASE_URL: await freshDatabaseUrl(t) };
  const a = await buildTestApp(t, env);
  const b = await buildTestApp(t, env);
  const admin = await createStaff(a, 'admin');
  const first = await openConversation(a, admin.token, { guestId: await insertGuest(a, 'Ana'), channel: 'web' });
  const kept = await untilKept(a, admin.token);
  assert.deepEqual(ids(kept.at(-1)!), [first.id]);

  const second = await openConversation(b, admin.token, { guestId: await insertGuest(b, 'Ben'), channel: 'web' });
  assert.deepEqual(ids(await call(a, 'GET', LIST, { token: admin.token })), [second.id, first.id]);
  await untilKept(a, admin.token);
  assert.equal(
    (await call(b, 'PATCH', `/conversations/${first.id}`, { token: admin.token, body: { status: 'closed' } })).status,
    200,
  );
  assert.deepEqual(ids(await call(a, 'GET', LIST, { token: admin.token })), [second.id]);
});

test("the hotel's time zone saved on another instance sets the next list's current stays", async (t) => {
  const env = { DATABASE_URL: await freshDatabaseUrl(t) };
  const a = await buildTestApp(t, env);
  const b = await buildTestApp(t, env);
  const admin = await createStaff(a, 'admin');
  // Kiritimati (UTC+14) is always a day or two ahead of Pago Pago (UTC-11): a stay ending on
  // Kiritimati's today is over there and still current in Pago Pago.
  const zone = async (timezone: string) =>
    assert.equal(
      (
        await call(b, 'PUT', '/settings/hotel', {
          token: admin.token,
          body: { value: { name: 'H', timezone, locale: 'en' } },
        })
      ).status,
      200,
    );
  await zone('Pacific/Kiritimati');
  const guestId = await insertGuest(a, 'Ana');
  const checkOut = new Intl.DateTimeFormat('en-CA', { timeZone: 'Pacific/Kiritimati' }).format(new Date());
  const stay = await call(a, 'POST', '/stays', {
    token: admin.token,
    body: { guestId, checkIn: '2020-01-01', checkOut, room: '7' },
  });
  assert.equal(stay.status, 201, JSON.stringify(stay.body));
  await openConversation(a, admin.token, { guestId, channel: 'web' });
  assert.equal((await untilKept(a, admin.token)).at(-1)!.data[0].stay, null);
  await zone('Pacific/Pago_Pago');
  const [after] = (await call(a, 'GET', LIST, { token: admin.token })).data;
  assert.equal(after.stay?.id, stay.data.id);
  assert.equal((await untilKept(a, admin.token)).at(-1)!.data[0].stay?.id, stay.data.id);
});

test("a staff member never gets a manager's kept page, nor a key without the scope", async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const manager = await createStaff(app, 'manager');
  const agent = await createStaff(app, 'staff');
  const theirs = await insertConversation(app, await insertGuest(app, 'Ana'), { assignee: agent.id });
  const nobodys = await insertConversation(app, await insertGuest(app, 'Ben'));
  const all = await untilKept(app, manager.token);
  assert.deepEqual(new Set(ids(all.at(-1)!)), new Set([theirs, nobodys]));
  const own = await untilKept(app, agent.token);
  for (const res of own) assert.deepEqual(ids(res), [theirs]);
  assert.deepEqual(new Set(ids(await call(app, 'GET', LIST, { token: manager.token }))), new Set([theirs, nobodys]));

  const key = await call(app, 'POST', '/api-keys', {
    token: admin.token,
    body: { name: 'pms', scopes: ['guests:read'] },
  });
  assert.equal(key.status, 201);
  assertError(await call(app, 'GET', LIST, { token: key.data.key }), 403, 'FORBIDDEN');
});

test('a kept page is read again once an SLA moment of its rows has passed', async (t) => {
  // The clock at the start of a UTC quarter-hour: the hotel's day cannot change within the test.
  t.mock.timers.enable({ apis: ['Date'], now: Math.floor(Date.now() / 900_000) * 900_000 + 1000 });
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const sla = {
    firstResponseMinutes: 10,
    businessHours: false,
    taskMinutes: { low: 600, normal: 240, high: 60, urgent: 15 },
  };
  assert.equal((await call(app, 'PUT', '/settings/sla', { token: admin.token, body: { value: sla } })).status, 200);
  const guestId = await insertGuest(app, 'Ana');
  const inbound = await call(app, 'POST', '/channels/web/inbound', {
    token: admin.token,
    body: { guestId, content: 'Is the pool open?', externalId: 'ext-1' },
  });
  assert.equal(inbound.status, 201, JSON.stringify(inbound.body));
  const status = (res: Res) => res.data[0].sla.status;
  for (const res of await untilKept(app, admin.token)) assert.equal(status(res), 'ok');
  t.mock.timers.tick(8.5 * 60_000);
  assert.equal(status(await call(app, 'GET', LIST, { token: admin.token })), 'at_risk');
  for (const res of await untilKept(app, admin.token)) assert.equal(status(res), 'at_risk');
  t.mock.timers.tick(2 * 60_000);
  assert.equal(status(await call(app, 'GET', LIST, { token: admin.token })), 'breached');
});

test('PAGE_CACHE=false keeps no page', async (t) => {
  const app = await buildTestApp(t, { PAGE_CACHE: 'false' });
  const admin = await createStaff(app, 'admin');
  const id = await insertConversation(app, await insertGuest(app));
  for (let i = 0; i < 3; i++) assert.deepEqual(ids(await call(app, 'GET', LIST, { token: admin.token })), [id]);
  assert.equal(app.ctx.pageCache, null);
});
