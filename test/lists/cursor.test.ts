// Tests walking lists by cursor (docs/decisions.md, src/lib/pages.ts, src/db/paginate.ts) through HTTP on
// whichever store is under test: a walk returns exactly the numbered pages' rows in order, with
// Link headers and meta as promised; rows that were neither inserted nor updated during a walk are
// seen exactly once, in order; a cursor that was not given by this list for these filters is a 400.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { buildTestApp, call, createStaff, type Res } from '../helpers.js';

const ENV = { RATE_LIMIT_STANDARD: '10000' };

/** Follows `Link: rel="next"` from `first` to the end; returns every page's response. */
async function walk(app: FastifyInstance, token: string, first: string, between?: (n: number) => Promise<void>) {
  const pages: Res[] = [];
  let url: string | null = first;
  while (url !== null) {
    const res = await call(app, 'GET', url, { token });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    pages.push(res);
    const link = res.headers.link as string | undefined;
    const next = link === undefined ? null : /^<([^>]+)>; rel="next"$/.exec(link)?.[1];
    assert.ok(next !== undefined, `Link header shape: ${link}`);
    if (next === null) {
      assert.equal(res.body.meta.nextCursor, null, 'no Link, no nextCursor');
    } else {
      assert.equal(new URL(next, 'http://x').searchParams.get('cursor'), res.body.meta.nextCursor);
      assert.equal(new URL(next, 'http://x').searchParams.get('page'), null, 'the next link asks by cursor');
    }
    url = next ?? null;
    if (between) await between(pages.length);
    assert.ok(pages.length < 200, 'the walk ends');
  }
  return pages;
}

async function seed(app: FastifyInstance, token: string, n: number) {
  const guests: string[] = [];
  const conversations: string[] = [];
  for (let i = 0; i < n; i++) {
    const g = await call(app, 'POST', '/guests', {
      token,
      body: { name: `Walker ${i}`, phone: `+1555020${String(1000 + i)}`, tags: i % 2 ? ['odd'] : [] },
    });
    guests.push(g.data.id);
    const c = await call(app, 'POST', '/conversations', {
      token,
      body: { guestId: g.data.id, channel: i % 3 ? 'web' : 'sms', content: `hello ${i}` },
    });
    conversations.push(c.data.id);
    await call(app, 'POST', '/tasks', { token, body: { title: `Task ${i}`, department: 'housekeeping' } });
  }
  return { guests, conversations };
}

test('every list walks by cursor through exactly the rows of its numbered pages, in order', async (t) => {
  const app = await buildTestApp(t, ENV);
  const admin = await createStaff(app, 'admin');
  const { conversations } = await seed(app, admin.token, 7);
  for (let i = 0; i < 7; i++) {
    await call(app, 'POST', `/conversations/${conversations[0]}/messages`, {
      token: admin.token,
      body: { content: `m${i}` },
    });
    await call(app, 'POST', '/knowledge', {
      token: admin.token,
      body: { title: `Entry ${i % 3}`, content: 'Towels and breakfast', category: 'general' },
    });
  }
  const lists = [
    '/conversations',
    '/conversations?channel=web',
    `/conversations/${conversations[0]}/messages`,
    '/guests',
    '/guests?tag=odd',
    '/guests?search=walker',
    '/tasks',
    '/tasks?status=open',
    '/knowledge',
    '/staff',
    '/webhooks',
  ];
  for (const list of lists) {
    const all = await call(app, 'GET', `${list}${list.includes('?') ? '&' : '?'}limit=100`, { token: admin.token });
    assert.equal(all.status, 200, list);
    const sep = list.includes('?') ? '&' : '?';
    const pages = await walk(app, admin.token, `${list}${sep}limit=3`);
    const walked = pages.flatMap((p) => p.data.map((r: { id: string }) => r.id));
    assert.deepEqual(
      walked,
      all.data.map((r: { id: string }) => r.id),
      list,
    );
    assert.equal(pages.length, Math.max(1, Math.ceil(all.body.meta.total / 3)), list);
    // The first page is numbered (page, total); the ones reached by cursor carry limit and nextCursor only.
    assert.equal(pages[0]!.body.meta.total, all.body.meta.total, list);
    for (const p of pages.slice(1)) assert.deepEqual(Object.keys(p.body.meta).sort(), ['limit', 'nextCursor'], list);
  }
});

test('a walk while rows are inserted and updated sees every untouched row exactly once, in order', async (t) => {
  const app = await buildTestApp(t, ENV);
  const admin = await createStaff(app, 'admin');
  const { conversations, guests } = await seed(app, admin.token, 12);
  const before = await call(app, 'GET', '/conversations?limit=100', { token: admin.token });
  const touched = new Set<string>();
  const pages = await walk(app, admin.token, '/conversations?limit=4', async (n) => {
    // A message moves a conversation to the top; a new one is inserted at the top.
    const moved = conversations[conversations.length - n]!;
    touched.add(moved);
    await call(app, 'POST', `/conversations/${moved}/messages`, { token: admin.token, body: { content: 'bump' } });
    const c = await call(app, 'POST', '/conversations', {
      token: admin.token,
      body: { guestId: guests[n]!, channel: 'web' },
    });
    touched.add(c.data.id);
  });
  const walked = pages.flatMap((p) => p.data.map((r: { id: string }) => r.id)).filter((id) => !touched.has(id));
  const untouched = before.data.map((r: { id: string }) => r.id).filter((id: string) => !touched.has(id));
  assert.deepEqual(walked, untouched);
  assert.equal(new Set(walked).size, walked.length, 'none twice');

  const tasks = await call(app, 'GET', '/tasks?limit=100', { token: admin.token });
  const doneTouched = new Set<string>();
  const taskPages = await walk(app, admin.token, '/tasks?limit=5', async (n) => {
    const id = tasks.data[n * 2]?.id as string | undefined;
    if (id === undefined) return;
    doneTouched.add(id);
    await call(app, 'PATCH', `/tasks/${id}`, { token: admin.token, body: { status: 'completed' } });
    const made = await call(app, 'POST', '/tasks', {
      token: admin.token,
      body: { title: 'New', department: 'housekeeping' },
    });
    doneTouched.add(made.data.id);
  });
  const walkedTasks = taskPages
    .flatMap((p) => p.data.map((r: { id: string }) => r.id))
    .filter((id) => !doneTouched.has(id));
  assert.deepEqual(
    walkedTasks,
    tasks.data.map((r: { id: string }) => r.id).filter((id: string) => !doneTouched.has(id)),
  );
});

test('a cursor that is tampered, truncated, for other filters or another list, or sent with page, is a 400', async (t) => {
  const app = await buildTestApp(t, ENV);
  const admin = await createStaff(app, 'admin');
  await seed(app, admin.token, 4);
  const first = await call(app, 'GET', '/conversations?channel=web&limit=1', { token: admin.token });
  const cursor = first.body.meta.nextCursor as string;
  assert.equal(typeof cursor, 'string');
  assert.equal(
    (await call(app, 'GET', `/conversations?channel=web&limit=1&cursor=${cursor}`, { token: admin.token })).status,
    200,
  );

  const [body, mac] = cursor.split('.') as [string, string];
  const forged = Buffer.from(JSON.stringify(['2000-01-01T00:00:00.000Z', 'cnv_0'])).toString('base64url');
  const flip = (s: string) => (s[0] === 'A' ? 'B' : 'A') + s.slice(1);
  const bad = [
    `${forged}.${mac}`, // other values under the old signature
    `${body}.${flip(mac)}`, // a changed signature
    `${body.slice(0, -2)}.${mac}`, // truncated
    `${body}.${mac.slice(0, -3)}`,
    body,
    `${Buffer.from("'; drop table conversations; --").toString('base64url')}.${mac}`,
  ];
  for (const c of bad) {
    const res = await call(app, 'GET', `/conversations?channel=web&limit=1&cursor=${encodeURIComponent(c)}`, {
      token: admin.token,
    });
    assert.equal(res.status, 400, c);
    assert.equal(res.body.error.code, 'VALIDATION_ERROR');
    assert.ok(
      res.body.error.details.some((d: { field: string }) => d.field.includes('cursor')),
      c,
    );
  }
  // The same cursor with another filter, none, or on another list.
  for (const url of [
    `/conversations?channel=sms&limit=1&cursor=${cursor}`,
    `/conversations?limit=1&cursor=${cursor}`,
    `/tasks?limit=1&cursor=${cursor}`,
    `/guests?limit=1&cursor=${cursor}`,
  ]) {
    const res = await call(app, 'GET', url, { token: admin.token });
    assert.equal(res.status, 400, url);
    assert.deepEqual(res.body.error.details, [
      { field: 'cursor', message: 'is not a cursor this list gave for these filters (use meta.nextCursor as it is)' },
    ]);
  }
  const both = await call(app, 'GET', `/conversations?channel=web&page=2&cursor=${cursor}`, { token: admin.token });
  assert.equal(both.status, 400);
  assert.deepEqual(
    both.body.error.details.map((d: { field: string }) => d.field),
    ['page', 'cursor'],
  );
  // Ranked search results are paged by number only.
  await call(app, 'POST', '/knowledge', {
    token: admin.token,
    body: { title: 'Spa', content: 'Spa hours', category: 'spa' },
  });
  const ranked = await call(app, 'GET', '/knowledge?search=spa&limit=1', { token: admin.token });
  assert.equal(ranked.body.meta.nextCursor, null);
  assert.equal(ranked.headers.link, undefined);
  const rankedCursor = await call(app, 'GET', `/knowledge?search=spa&cursor=${cursor}`, { token: admin.token });
  assert.equal(rankedCursor.status, 400);
});

test('a cursor stays valid on another instance with the same secret, and across a secret rotation', async (t) => {
  const { freshDatabaseUrl, JWT_SECRET } = await import('../helpers.js');
  const env = { ...ENV, DATABASE_URL: await freshDatabaseUrl(t) };
  const a = await buildTestApp(t, env);
  const admin = await createStaff(a, 'admin');
  await seed(a, admin.token, 3);
  const first = await call(a, 'GET', '/guests?limit=1', { token: admin.token });
  const cursor = first.body.meta.nextCursor;
  const b = await buildTestApp(t, env);
  const onB = await call(b, 'GET', `/guests?limit=1&cursor=${cursor}`, { token: admin.token });
  assert.equal(onB.status, 200);
  assert.deepEqual(onB.data, (await call(a, 'GET', '/guests?limit=1&page=2', { token: admin.token })).data);
  const rotated = await buildTestApp(t, {
    ...env,
    JWT_SECRET: 'a-new-secret-that-is-long-enough-9876543210',
    JWT_SECRET_PREVIOUS: JWT_SECRET,
  });
  assert.equal((await call(rotated, 'GET', `/guests?limit=1&cursor=${cursor}`, { token: admin.token })).status, 200);
  // Once the old secret is dropped, its cursors are refused like any other unknown cursor.
  const other = await buildTestApp(t, { ...env, JWT_SECRET: 'a-new-secret-that-is-long-enough-9876543210' });
  const token = other.ctx.tokens.sign(admin.id, 'admin').token;
  assert.equal((await call(other, 'GET', `/guests?limit=1&cursor=${cursor}`, { token })).status, 400);
});
