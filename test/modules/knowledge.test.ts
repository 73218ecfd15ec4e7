import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { buildTestApp, call, createStaff } from '../helpers.js';

interface Kb {
  app: FastifyInstance;
  admin: string;
  manager: string;
  staff: string;
}

async function setup(t: Parameters<typeof buildTestApp>[0]): Promise<Kb> {
  const app = await buildTestApp(t);
  const [admin, manager, staff] = await Promise.all([
    createStaff(app, 'admin'),
    createStaff(app, 'manager'),
    createStaff(app, 'staff'),
  ]);
  return { app, admin: admin.token, manager: manager.token, staff: staff.token };
}

async function add(kb: Kb, body: Record<string, unknown>) {
  const res = await call(kb.app, 'POST', '/knowledge', { token: kb.manager, body });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.data as { id: string; title: string };
}

const search = (kb: Kb, q: string, extra = '') =>
  call(kb.app, 'GET', `/knowledge?search=${encodeURIComponent(q)}${extra}`, { token: kb.staff });
const titles = (res: { data: { title: string }[] }) => res.data.map((e) => e.title);

test('POST /knowledge creates an entry in the general category unless one is given', async (t) => {
  const kb = await setup(t);
  const res = await call(kb.app, 'POST', '/knowledge', {
    token: kb.manager,
    body: { title: 'Checkout time', content: 'Checkout is at 11:00.' },
  });
  assert.equal(res.status, 201);
  assert.deepEqual(Object.keys(res.data).sort(), ['category', 'content', 'createdAt', 'id', 'title', 'updatedAt']);
  assert.match(res.data.id, /^kb_[0-9a-z]{26}$/);
  assert.equal(res.data.category, 'general');
  assert.equal(res.data.title, 'Checkout time');
  assert.equal(new Date(res.data.createdAt).toISOString(), res.data.createdAt);
  assert.equal(res.data.updatedAt, res.data.createdAt);

  const withCategory = await call(kb.app, 'POST', '/knowledge', {
    token: kb.admin,
    body: { title: 'Spa', content: 'Open 9 to 5.', category: 'spa' },
  });
  assert.equal(withCategory.status, 201);
  assert.equal(withCategory.data.category, 'spa');

  const got = await call(kb.app, 'GET', `/knowledge/${res.data.id}`, { token: kb.staff });
  assert.equal(got.status, 200);
  assert.deepEqual(got.data, res.data);
});

test('POST /knowledge rejects a bad body with 400 naming the field', async (t) => {
  const kb = await setup(t);
  const cases: [Record<string, unknown>, string][] = [
    [{ content: 'x' }, 'title'],
    [{ title: 'x' }, 'content'],
    [{ title: '', content: 'x' }, 'title'],
    [{ title: 'x'.repeat(201), content: 'x' }, 'title'],
    [{ title: 'x', content: 'x'.repeat(50_001) }, 'content'],
    [{ title: 'x', content: 'x', category: 'c'.repeat(51) }, 'category'],
    [{ title: 'x', content: 'x', category: '' }, 'category'],
    [{ title: 'x', content: 'x', author: 'me' }, 'author'],
    [{ title: 5, content: 'x' }, 'title'],
    [{ title: 'x', content: ['x'] }, 'content'],
  ];
  for (const [body, field] of cases) {
    const res = await call(kb.app, 'POST', '/knowledge', { token: kb.manager, body });
    assert.equal(res.status, 400, JSON.stringify(body));
    assert.equal(res.body.error.code, 'VALIDATION_ERROR');
    assert.ok(
      res.body.error.details.some((d: { field: string }) => d.field === field),
      `${JSON.stringify(body)} → ${JSON.stringify(res.body.error.details)}`,
    );
  }
  const edge = await call(kb.app, 'POST', '/knowledge', {
    token: kb.manager,
    body: { title: 't'.repeat(200), content: 'c'.repeat(50_000), category: 'k'.repeat(50) },
  });
  assert.equal(edge.status, 201);
  const list = await call(kb.app, 'GET', '/knowledge', { token: kb.staff });
  assert.equal(list.body.meta.total, 1, 'no rejected body was stored');
});

test('GET /knowledge/:id answers 404 NOT_FOUND for an unknown id', async (t) => {
  const kb = await setup(t);
  const res = await call(kb.app, 'GET', '/knowledge/kb_01jd8x3k5q7w9e2r4t6y8u0i1o', { token: kb.staff });
  assert.equal(res.status, 404);
  assert.equal(res.body.error.code, 'NOT_FOUND');
});

test('GET /knowledge filters by category, orders by title and paginates', async (t) => {
  const kb = await setup(t);
  for (const title of ['Sauna', 'Massage', 'Pool hours', 'Facials']) {
    await add(kb, { title, content: `About ${title}`, category: title === 'Pool hours' ? 'pool' : 'spa' });
  }
  const first = await call(kb.app, 'GET', '/knowledge?category=spa&limit=2', { token: kb.staff });
  assert.equal(first.status, 200);
  assert.deepEqual(titles(first), ['Facials', 'Massage']);
  assert.deepEqual(
    { ...first.body.meta, nextCursor: typeof first.body.meta.nextCursor },
    { page: 1, limit: 2, total: 3, pages: 2, nextCursor: 'string' },
  );
  const second = await call(kb.app, 'GET', '/knowledge?category=spa&limit=2&page=2', { token: kb.staff });
  assert.deepEqual(titles(second), ['Sauna']);
  const past = await call(kb.app, 'GET', '/knowledge?category=spa&limit=2&page=3', { token: kb.staff });
  assert.deepEqual(past.data, []);
  assert.equal(past.body.meta.total, 3);

  const all = await call(kb.app, 'GET', '/knowledge', { token: kb.staff });
  assert.deepEqual(titles(all), ['Facials', 'Massage', 'Pool hours', 'Sauna']);
  assert.deepEqual(all.body.meta, { page: 1, limit: 20, total: 4, pages: 1, nextCursor: null });
  const none = await call(kb.app, 'GET', '/knowledge?category=golf', { token: kb.staff });
  assert.deepEqual(none.data, []);
  assert.equal(none.body.meta.total, 0);
});

test('GET /knowledge rejects bad query values with 400', async (t) => {
  const kb = await setup(t);
  for (const qs of [
    'limit=0',
    'limit=101',
    'page=0',
    'page=x',
    'category=',
    'sort=title',
    `search=${'a'.repeat(201)}`,
  ]) {
    const res = await call(kb.app, 'GET', `/knowledge?${qs}`, { token: kb.staff });
    assert.equal(res.status, 400, qs);
    assert.equal(res.body.error.code, 'VALIDATION_ERROR', qs);
  }
});

test('search finds words in the body, stemmed forms and any case, ranking title matches first', async (t) => {
  const kb = await setup(t);
  await add(kb, { title: 'Spa hours', content: 'The spa hands out fresh towels every morning.', category: 'spa' });
  await add(kb, { title: 'Extra towel', content: 'Housekeeping brings one on request.', category: 'rooms' });
  await add(kb, { title: 'Wireless internet', content: 'The WiFi password is on the key card.', category: 'rooms' });
  await add(kb, { title: 'Parking', content: 'Valet parking costs 30 per night.', category: 'general' });

  const body = await search(kb, 'password');
  assert.equal(body.status, 200);
  assert.deepEqual(titles(body), ['Wireless internet']);
  assert.equal(body.body.meta.total, 1);

  // "towels" and "towel" share a stem; the entry with it in its title ranks above the body-only one,
  // although it was created later (ties would be broken by id, the older first).
  for (const q of ['towels', 'towel', 'TOWELS']) {
    const res = await search(kb, q);
    assert.deepEqual(titles(res), ['Extra towel', 'Spa hours'], q);
    assert.equal(res.body.meta.total, 2, q);
  }
  assert.deepEqual(titles(await search(kb, 'wifi')), ['Wireless internet']);
  assert.deepEqual(titles(await search(kb, 'Parked')), ['Parking'], 'stemmed: parked ~ parking');

  const both = await search(kb, 'valet night');
  assert.deepEqual(titles(both), ['Parking'], 'every word must match');
  const none = await search(kb, 'valet towel');
  assert.deepEqual(none.data, []);
  assert.deepEqual(none.body.meta, { page: 1, limit: 20, total: 0, pages: 0, nextCursor: null });
  assert.deepEqual((await search(kb, 'helicopter')).data, []);

  const inCategory = await search(kb, 'towels', '&category=spa');
  assert.deepEqual(titles(inCategory), ['Spa hours']);
  assert.equal(inCategory.body.meta.total, 1);
  const paged = await search(kb, 'towels', '&limit=1&page=2');
  assert.deepEqual(titles(paged), ['Spa hours']);
  assert.deepEqual(paged.body.meta, { page: 2, limit: 1, total: 2, pages: 2, nextCursor: null });
  // The total is counted in the page's own read: a page past the matches still tells it.
  const past = await search(kb, 'towels', '&category=spa&limit=1&page=3');
  assert.deepEqual(past.data, []);
  assert.deepEqual(past.body.meta, { page: 3, limit: 1, total: 1, pages: 1, nextCursor: null });
});

test('search text is never read as query syntax: hostile strings answer 200', async (t) => {
  const kb = await setup(t);
  await add(kb, { title: 'Breakfast', content: 'Served from 7 to 10 in the foo room.' });
  const hostile = [
    '"',
    '""',
    '*',
    'foo*',
    'NEAR(',
    'NEAR(foo breakfast)',
    '-',
    '-foo',
    'foo OR',
    'AND',
    '(',
    ')',
    "'; drop table x; --",
    "'; drop table knowledge_entries; --",
    '%_',
    'title:foo',
    '^foo',
    '{title content}: foo',
    '\\',
    '!&|:<>',
    '😀',
    'é',
  ];
  for (const q of hostile) {
    const res = await search(kb, q);
    assert.equal(res.status, 200, `${q} → ${JSON.stringify(res.body)}`);
    assert.ok(Array.isArray(res.data), q);
  }
  // With operators ignored, the words in them still search, as plain words.
  assert.deepEqual(titles(await search(kb, 'NEAR(foo breakfast)')), []);
  assert.deepEqual(titles(await search(kb, '"breakfast" foo*')), ['Breakfast']);
  assert.deepEqual(titles(await search(kb, '-foo')), ['Breakfast'], 'a leading - is not negation');
  // Text with no words finds nothing; an empty search is no search.
  for (const q of ['*', '%_', '"', '😀']) assert.deepEqual((await search(kb, q)).data, [], q);
  const empty = await search(kb, '');
  assert.deepEqual(titles(empty), ['Breakfast']);
  const listed = await call(kb.app, 'GET', '/knowledge', { token: kb.staff });
  assert.equal(listed.body.meta.total, 1, 'the table is still there');
});

test('PUT /knowledge/:id replaces title and content; search follows the new words', async (t) => {
  const kb = await setup(t);
  const entry = await add(kb, { title: 'Gym', content: 'Treadmills on level two.', category: 'fitness' });
  const res = await call(kb.app, 'PUT', `/knowledge/${entry.id}`, {
    token: kb.admin,
    body: { title: 'Fitness centre', content: 'Rowing machines in the basement.' },
  });
  assert.equal(res.status, 200);
  assert.equal(res.data.id, entry.id);
  assert.equal(res.data.title, 'Fitness centre');
  assert.equal(res.data.content, 'Rowing machines in the basement.');
  assert.equal(res.data.category, 'fitness', 'category unchanged when omitted');
  assert.ok(res.data.updatedAt >= res.data.createdAt);
  assert.deepEqual((await call(kb.app, 'GET', `/knowledge/${entry.id}`, { token: kb.staff })).data, res.data);

  assert.deepEqual(titles(await search(kb, 'rowing basement')), ['Fitness centre']);
  assert.deepEqual(titles(await search(kb, 'fitness')), ['Fitness centre']);
  assert.deepEqual((await search(kb, 'treadmills')).data, []);
  assert.deepEqual((await search(kb, 'gym')).data, []);

  const moved = await call(kb.app, 'PUT', `/knowledge/${entry.id}`, {
    token: kb.manager,
    body: { title: 'Fitness centre', content: 'Rowing machines.', category: 'wellness' },
  });
  assert.equal(moved.data.category, 'wellness');
  const byCategory = await call(kb.app, 'GET', '/knowledge?category=fitness', { token: kb.staff });
  assert.equal(byCategory.body.meta.total, 0);

  const partial = await call(kb.app, 'PUT', `/knowledge/${entry.id}`, { token: kb.admin, body: { title: 'Only' } });
  assert.equal(partial.status, 400);
  assert.equal(partial.body.error.details[0].field, 'content');
  const extra = await call(kb.app, 'PUT', `/knowledge/${entry.id}`, {
    token: kb.admin,
    body: { title: 'a', content: 'b', id: 'kb_x' },
  });
  assert.equal(extra.status, 400);
  assert.equal(extra.body.error.details[0].field, 'id');
});

test('DELETE /knowledge/:id removes the entry from get, list and search', async (t) => {
  const kb = await setup(t);
  const gone = await add(kb, { title: 'Shuttle', content: 'Airport shuttle every hour.' });
  await add(kb, { title: 'Taxi', content: 'Ask the concierge for an airport taxi.' });
  const res = await call(kb.app, 'DELETE', `/knowledge/${gone.id}`, { token: kb.admin });
  assert.equal(res.status, 200);
  assert.deepEqual(res.body, { success: true, data: { id: gone.id, deleted: true } });

  assert.equal((await call(kb.app, 'GET', `/knowledge/${gone.id}`, { token: kb.staff })).status, 404);
  assert.deepEqual(titles(await search(kb, 'airport')), ['Taxi']);
  assert.deepEqual((await search(kb, 'shuttle')).data, []);
  assert.equal((await call(kb.app, 'GET', '/knowledge', { token: kb.staff })).body.meta.total, 1);
  const again = await call(kb.app, 'DELETE', `/knowledge/${gone.id}`, { token: kb.admin });
  assert.equal(again.status, 404);
  assert.equal(again.body.error.code, 'NOT_FOUND');
});

test('PUT and DELETE of an unknown id answer 404 NOT_FOUND', async (t) => {
  const kb = await setup(t);
  const id = 'kb_01jd8x3k5q7w9e2r4t6y8u0i1o';
  const put = await call(kb.app, 'PUT', `/knowledge/${id}`, { token: kb.admin, body: { title: 'a', content: 'b' } });
  assert.equal(put.status, 404);
  assert.equal(put.body.error.code, 'NOT_FOUND');
  const del = await call(kb.app, 'DELETE', `/knowledge/${id}`, { token: kb.manager });
  assert.equal(del.status, 404);
  assert.equal(del.body.error.code, 'NOT_FOUND');
});

test('staff read and search the knowledge base but may not write it', async (t) => {
  const kb = await setup(t);
  const entry = await add(kb, { title: 'Late checkout', content: 'Until 14:00 for a fee.' });
  assert.equal((await call(kb.app, 'GET', '/knowledge', { token: kb.staff })).status, 200);
  assert.equal((await call(kb.app, 'GET', `/knowledge/${entry.id}`, { token: kb.staff })).status, 200);
  assert.deepEqual(titles(await search(kb, 'checkout')), ['Late checkout']);

  const body = { title: 'x', content: 'y' };
  const writes = [
    await call(kb.app, 'POST', '/knowledge', { token: kb.staff, body }),
    await call(kb.app, 'PUT', `/knowledge/${entry.id}`, { token: kb.staff, body }),
    await call(kb.app, 'DELETE', `/knowledge/${entry.id}`, { token: kb.staff }),
  ];
  for (const res of writes) {
    assert.equal(res.status, 403);
    assert.equal(res.body.error.code, 'FORBIDDEN');
  }
  const still = await call(kb.app, 'GET', `/knowledge/${entry.id}`, { token: kb.staff });
  assert.equal(still.data.title, 'Late checkout');
  assert.equal((await call(kb.app, 'GET', '/knowledge', { token: kb.staff })).body.meta.total, 1);

  const anonymous = await call(kb.app, 'GET', '/knowledge');
  assert.equal(anonymous.status, 401);
  assert.equal(anonymous.body.error.code, 'TOKEN_MISSING');
});
