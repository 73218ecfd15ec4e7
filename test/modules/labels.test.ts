// Conversation labels (docs/productivity.md): set by PATCH and bulk, normalised, limited by the
// `labels` setting, and filtered any-of with exact totals.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { assertError, insertConversation, insertGuest } from '../fixtures.js';
import { buildTestApp, call, createStaff, type TestUser } from '../helpers.js';

interface Desk {
  app: FastifyInstance;
  manager: TestUser;
  staff: TestUser;
}

async function desk(t: Parameters<typeof buildTestApp>[0]): Promise<Desk> {
  const app = await buildTestApp(t);
  const [manager, staff] = await Promise.all([createStaff(app, 'manager'), createStaff(app, 'staff')]);
  return { app, manager, staff };
}

const label = (d: Desk, id: string, labels: unknown, token = d.manager.token) =>
  call(d.app, 'PATCH', `/conversations/${id}`, { token, body: { labels } });

const listed = async (d: Desk, query: string, token = d.manager.token) => {
  const res = await call(d.app, 'GET', `/conversations?${query}`, { token });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return { ids: (res.data as { id: string }[]).map((c) => c.id), total: res.body.meta.total as number, res };
};

test('PATCH sets labels trimmed, lower-case and each once, shown on get and list; [] clears them', async (t) => {
  const d = await desk(t);
  const id = await insertConversation(d.app, await insertGuest(d.app));
  const res = await label(d, id, [' VIP ', 'vip', 'Late-Checkout', 'Ünïcode']);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.deepEqual(res.data.labels, ['vip', 'late-checkout', 'ünïcode']);
  assert.deepEqual((await call(d.app, 'GET', `/conversations/${id}`, { token: d.manager.token })).data.labels, [
    'vip',
    'late-checkout',
    'ünïcode',
  ]);
  assert.deepEqual((await listed(d, 'label=VIP')).ids, [id]);
  const cleared = await label(d, id, []);
  assert.deepEqual(cleared.data.labels, []);
  assert.deepEqual(await listed(d, 'label=vip').then((l) => [l.ids, l.total]), [[], 0]);
});

test('bad labels are a VALIDATION_ERROR naming labels', async (t) => {
  const d = await desk(t);
  const id = await insertConversation(d.app, await insertGuest(d.app));
  const cases: unknown[] = [Array.from({ length: 21 }, (_, i) => `l${i}`), ['   '], ['a,b'], ['x'.repeat(51)], 'vip'];
  for (const labels of cases) {
    const res = await label(d, id, labels);
    assertError(res, 400, 'VALIDATION_ERROR', JSON.stringify(labels));
    assert.ok(
      res.body.error.details.some((e: { field: string }) => e.field.startsWith('labels')),
      JSON.stringify(res.body),
    );
  }
  // 25 given, 20 once lower-cased: the limit counts after normalising.
  const many = Array.from({ length: 20 }, (_, i) => `l${i}`);
  const ok = await label(d, id, [...many, 'L1', 'L2', 'L3', 'L4', 'L5']);
  assert.equal(ok.status, 200, JSON.stringify(ok.body));
  assert.equal(ok.data.labels.length, 20);
});

test('the labels setting, when it lists labels, refuses others; empty allows any', async (t) => {
  const d = await desk(t);
  const admin = await createStaff(d.app, 'admin');
  const id = await insertConversation(d.app, await insertGuest(d.app));
  const put = (value: unknown) => call(d.app, 'PUT', '/settings/labels', { token: admin.token, body: { value } });
  assert.equal((await put(['VIP', 'complaint'])).status, 200);
  const refused = await label(d, id, ['vip', 'spa']);
  assertError(refused, 400, 'VALIDATION_ERROR');
  assert.equal(refused.body.error.details[0].field, 'labels');
  assert.match(refused.body.error.details[0].message, /spa/);
  assert.deepEqual((await label(d, id, ['Vip', 'COMPLAINT'])).data.labels, ['vip', 'complaint']);
  assertError(await put(['a,b']), 400, 'VALIDATION_ERROR');
  assert.equal((await put([])).status, 200);
  assert.equal((await label(d, id, ['spa'])).status, 200);
});

test('?label=a,b lists conversations with any of them once, newest activity first, with exact totals', async (t) => {
  const d = await desk(t);
  const guest = await insertGuest(d.app);
  const ids: string[] = [];
  for (let i = 0; i < 4; i++) ids.push(await insertConversation(d.app, guest, { assignee: d.staff.id }));
  const [onlyA, onlyB, ab, plain] = ids as [string, string, string, string];
  await label(d, onlyA, ['a']);
  await label(d, onlyB, ['b', 'c']);
  await label(d, ab, ['b', 'a']);
  assert.ok(plain);
  // Activity moves a conversation to the top of its labels' lists too.
  for (const id of [ab, onlyB, onlyA]) {
    const sent = await call(d.app, 'POST', `/conversations/${id}/messages`, {
      token: d.manager.token,
      body: { content: 'Noted', type: 'note' },
    });
    assert.equal(sent.status, 201);
  }
  assert.deepEqual(await listed(d, 'label=a,B').then((l) => [l.ids, l.total]), [[onlyA, onlyB, ab], 3]);
  assert.deepEqual(await listed(d, 'label=a').then((l) => [l.ids, l.total]), [[onlyA, ab], 2]);
  assert.deepEqual(await listed(d, 'label=zzz,c').then((l) => [l.ids, l.total]), [[onlyB], 1]);
  // Other filters apply too, and totals follow status changes.
  await call(d.app, 'PATCH', `/conversations/${ab}`, { token: d.manager.token, body: { status: 'closed' } });
  assert.deepEqual(await listed(d, 'label=a&status=open').then((l) => [l.ids, l.total]), [[onlyA], 1]);
  assert.deepEqual(await listed(d, 'label=a,b&status=closed').then((l) => [l.ids, l.total]), [[ab], 1]);
  assert.deepEqual(await listed(d, 'label=a&assignee=unassigned').then((l) => [l.ids, l.total]), [[], 0]);
  // Pages and cursors walk the same list.
  const first = await listed(d, 'label=a,b&limit=2');
  assert.deepEqual([first.ids, first.total], [[onlyA, onlyB], 3]);
  const cursor = first.res.body.meta.nextCursor as string;
  const next = await call(d.app, 'GET', `/conversations?label=a,b&limit=2&cursor=${encodeURIComponent(cursor)}`, {
    token: d.manager.token,
  });
  assert.deepEqual(
    next.data.map((c: { id: string }) => c.id),
    [ab],
  );
  assert.deepEqual((await listed(d, 'label=a,b&limit=2&page=2')).ids, [ab]);
  // Too many labels in the filter is a VALIDATION_ERROR naming it.
  const wide = await call(d.app, 'GET', `/conversations?label=${Array.from({ length: 21 }, (_, i) => i).join(',')}`, {
    token: d.manager.token,
  });
  assertError(wide, 400, 'VALIDATION_ERROR');
  assert.equal(wide.body.error.details[0].field, 'label');
});

test('a staff member labels their own conversations, lists only their own, and cannot label others', async (t) => {
  const d = await desk(t);
  const guest = await insertGuest(d.app);
  const mine = await insertConversation(d.app, guest, { assignee: d.staff.id });
  const theirs = await insertConversation(d.app, guest);
  assert.equal((await label(d, mine, ['vip'], d.staff.token)).status, 200);
  assertError(await label(d, theirs, ['vip'], d.staff.token), 403, 'FORBIDDEN');
  await label(d, theirs, ['vip']);
  assert.deepEqual(await listed(d, 'label=vip', d.staff.token).then((l) => [l.ids, l.total]), [[mine], 1]);
  assert.equal((await listed(d, 'label=vip')).total, 2);
});

test('PATCH /conversations/bulk sets labels item by item', async (t) => {
  const d = await desk(t);
  const guest = await insertGuest(d.app);
  const one = await insertConversation(d.app, guest);
  const two = await insertConversation(d.app, guest);
  const res = await call(d.app, 'PATCH', '/conversations/bulk', {
    token: d.manager.token,
    body: {
      items: [
        { id: one, labels: ['VIP'] },
        { id: two, labels: ['x'.repeat(51)] },
        { id: two, status: 'pending', labels: ['spa', 'vip'] },
      ],
    },
  });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.deepEqual(
    res.data.map((r: { success: boolean }) => r.success),
    [true, false, true],
  );
  assert.equal(res.data[1].error.code, 'VALIDATION_ERROR');
  assert.deepEqual(res.data[2].data.labels, ['spa', 'vip']);
  assert.deepEqual(await listed(d, 'label=vip&status=pending').then((l) => [l.ids, l.total]), [[two], 1]);
});

test('any-of pages, cursors and totals agree with the labels as set, however they overlap', async (t) => {
  const d = await desk(t);
  const guest = await insertGuest(d.app);
  const sets = [['a'], ['b', 'c'], ['a', 'b', 'c'], [], ['c'], ['b'], ['a', 'c'], ['d']];
  const ids: string[] = [];
  for (const labels of sets) {
    const id = await insertConversation(d.app, guest);
    await label(d, id, labels);
    // Each one later than the one before: the newest is listed first.
    await call(d.app, 'POST', `/conversations/${id}/messages`, {
      token: d.manager.token,
      body: { content: 'Noted', type: 'note' },
    });
    ids.push(id);
  }
  for (const filter of [
    ['a', 'b'],
    ['c', 'a', 'b'],
    ['b', 'd'],
    ['d', 'x'],
  ]) {
    const expected = ids.filter((_, i) => sets[i]!.some((l) => filter.includes(l))).reverse();
    const query = `label=${filter.join(',')}`;
    const all = await listed(d, query);
    assert.deepEqual([all.ids, all.total], [expected, expected.length], query);
    const byPage: string[] = [];
    for (let page = 1; page <= 4; page++) byPage.push(...(await listed(d, `${query}&limit=2&page=${page}`)).ids);
    assert.deepEqual(byPage, expected, `${query} by page`);
    const byCursor: string[] = [];
    let url = `/conversations?${query}&limit=2`;
    for (;;) {
      const res = await call(d.app, 'GET', url, { token: d.manager.token });
      byCursor.push(...res.data.map((c: { id: string }) => c.id));
      const next = res.body.meta.nextCursor as string | null;
      if (next === null) break;
      url = `/conversations?${query}&limit=2&cursor=${encodeURIComponent(next)}`;
    }
    assert.deepEqual(byCursor, expected, `${query} by cursor`);
  }
});

test('a guest writing to a closed labelled conversation reopens it in its label list and totals too', async (t) => {
  const d = await desk(t);
  const admin = await createStaff(d.app, 'admin');
  const guest = await insertGuest(d.app);
  const id = await insertConversation(d.app, guest);
  await label(d, id, ['vip']);
  await call(d.app, 'PATCH', `/conversations/${id}`, { token: d.manager.token, body: { status: 'closed' } });
  assert.deepEqual(await listed(d, 'label=vip&status=open').then((l) => [l.ids, l.total]), [[], 0]);
  const inbound = await call(d.app, 'POST', '/channels/web/inbound', {
    token: admin.token,
    body: { guestId: guest, content: 'One more thing', externalId: 'w-reopen' },
  });
  assert.equal(inbound.status, 201, JSON.stringify(inbound.body));
  assert.equal(inbound.data.message.conversationId, id);
  assert.deepEqual(await listed(d, 'label=vip&status=open').then((l) => [l.ids, l.total]), [[id], 1]);
  assert.deepEqual(await listed(d, 'label=vip&status=closed').then((l) => [l.ids, l.total]), [[], 0]);
});
