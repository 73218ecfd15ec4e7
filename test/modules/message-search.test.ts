import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import fc from 'fast-check';
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import pg from 'pg';
import { newId } from '../../src/lib/ids.js';
import { uploadText } from '../attachments/files.js';
import { assertError, insertConversation, insertGuest, openConversation } from '../fixtures.js';
import { buildTestApp, call, createStaff, freshDatabaseUrl, TEST_STORE, type TestUser } from '../helpers.js';

interface World {
  app: FastifyInstance;
  admin: TestUser;
  manager: TestUser;
  staff: TestUser;
  guestId: string;
}

async function setup(t: TestContext, env: Record<string, string> = {}): Promise<World> {
  const app = await buildTestApp(t, env);
  const [admin, manager, staff] = await Promise.all([
    createStaff(app, 'admin'),
    createStaff(app, 'manager'),
    createStaff(app, 'staff'),
  ]);
  return { app, admin, manager, staff, guestId: await insertGuest(app) };
}

/** A conversation (email unless told) holding these messages, posted in order by the admin. */
async function conversation(w: World, contents: (string | { content: string; type: 'note' })[], body = {}) {
  const c = await openConversation(w.app, w.admin.token, { guestId: w.guestId, channel: 'email', ...body });
  const ids: string[] = [];
  for (const m of contents) {
    const res = await call(w.app, 'POST', `/conversations/${c.id}/messages`, {
      token: w.admin.token,
      body: typeof m === 'string' ? { content: m } : m,
    });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    ids.push(res.data.id);
  }
  return { id: c.id as string, ids };
}

const search = (w: World, q: string, extra = '', token = w.manager.token) =>
  call(w.app, 'GET', `/messages/search?q=${encodeURIComponent(q)}${extra}`, { token });
const contents = (res: { data: { content: string }[] }) => res.data.map((m) => m.content);

test('search finds messages holding every word, the last as a prefix, best match first, with a highlight', async (t) => {
  const w = await setup(t);
  const c = await conversation(w, [
    'Could we have a late checkout tomorrow?',
    'Late checkout is fine: late, late, late checkout until 2 pm.',
    'The checkout desk opens at 7.',
    'We will arrive late tonight.',
  ]);
  const res = await search(w, 'late check');
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.deepEqual(contents(res), [
    'Late checkout is fine: late, late, late checkout until 2 pm.',
    'Could we have a late checkout tomorrow?',
  ]);
  assert.deepEqual(res.body.meta, { page: 1, limit: 20, total: 2, pages: 1, nextCursor: null, capped: false });
  const [best] = res.data;
  assert.equal(best.conversationId, c.id);
  assert.equal(best.id, c.ids[1]);
  assert.equal(best.direction, 'outbound');
  assert.equal(
    best.highlight,
    '<mark>Late</mark> <mark>checkout</mark> is fine: <mark>late</mark>, <mark>late</mark>, <mark>late</mark> <mark>checkout</mark> until 2 pm.',
  );
  // Only the last word is a prefix: "chec late" needs the word "chec" itself.
  assert.deepEqual(contents(await search(w, 'chec late')), []);
  // A word that is not there rules a message out, however many others are.
  assert.deepEqual(contents(await search(w, 'late checkout breakfast')), []);
});

test('search matches case- and accent-insensitively in any script, never stemmed', async (t) => {
  const w = await setup(t);
  await conversation(w, [
    'Frau Müller fragt nach dem Frühstück',
    'Гость Москва просит такси',
    'José Ñúñez llega mañana',
    'The guests are running',
    '東京から来ました',
  ]);
  assert.deepEqual(contents(await search(w, 'MÜLLER')), ['Frau Müller fragt nach dem Frühstück']);
  assert.deepEqual(contents(await search(w, 'muller fruhstuck')), ['Frau Müller fragt nach dem Frühstück']);
  assert.deepEqual(contents(await search(w, 'МОСКВА')), ['Гость Москва просит такси']);
  assert.deepEqual(contents(await search(w, 'jose nunez')), ['José Ñúñez llega mañana']);
  // Not stemmed: "run" is a prefix of "running", "guest" is not the word "guests" but its prefix.
  assert.deepEqual(contents(await search(w, 'guest run')), []);
  assert.deepEqual(contents(await search(w, 'guests run')), ['The guests are running']);
  // A run of CJK characters is one word: found by its start.
  assert.deepEqual(contents(await search(w, '東京')), ['東京から来ました']);
  const [hit] = (await search(w, 'MULLER')).data;
  assert.equal(hit.highlight, 'Frau <mark>Müller</mark> fragt nach dem Frühstück');
});

test('notes are searched, punctuation separates words, and the highlight escapes the rest as HTML', async (t) => {
  const w = await setup(t);
  await conversation(w, [
    { content: 'VIP: <b>anna@hotel.example</b> wants the "sea-view" suite & a cot', type: 'note' },
  ]);
  const res = await search(w, 'anna hotel sea view');
  assert.equal(res.status, 200);
  assert.equal(res.data.length, 1);
  assert.equal(res.data[0].type, 'note');
  assert.equal(
    res.data[0].highlight,
    'VIP: &lt;b&gt;<mark>anna</mark>@<mark>hotel</mark>.example&lt;/b&gt; wants the &quot;<mark>sea</mark>-<mark>view</mark>&quot; suite &amp; a cot',
  );
});

test('a long message is cut around its first match at word boundaries', async (t) => {
  const w = await setup(t);
  const filler = 'lorem ipsum dolor sit amet '.repeat(20);
  await conversation(w, [`${filler}the spare towel is in the wardrobe ${filler}`]);
  const [hit] = (await search(w, 'wardrobe')).data;
  assert.ok(hit.highlight.startsWith('…'), hit.highlight);
  assert.ok(hit.highlight.endsWith('…'), hit.highlight);
  assert.match(hit.highlight, /the spare towel is in the <mark>wardrobe<\/mark> lorem/);
  const text = hit.highlight.replace(/<\/?mark>/g, '');
  assert.ok(text.length <= 202, `${text.length}`);
  // Whole words only at both ends.
  assert.match(text, /^…(lorem|ipsum|dolor|sit|amet) /);
  assert.match(text, / (lorem|ipsum|dolor|sit|amet)…$/);
});

test('FTS and tsquery operators, quotes and punctuation in q are words or separators, never an error', async (t) => {
  const w = await setup(t);
  await conversation(w, ['Room 512 needs towels AND soap', 'NEAR the lift: room 12']);
  for (const q of [
    '"room',
    'room" OR "lift',
    'NEAR(room lift)',
    'room -towels',
    'content:room',
    "room' & !lift:*",
    'room*',
    '(room) | (lift)',
    'room\\',
    '^room',
    'towels AND',
  ]) {
    const res = await search(w, q);
    assert.equal(res.status, 200, `${q}: ${JSON.stringify(res.body)}`);
  }
  assert.deepEqual(contents(await search(w, 'NEAR(room lift)')), ['NEAR the lift: room 12']);
  assert.deepEqual(contents(await search(w, 'towels AND')), ['Room 512 needs towels AND soap']);
  assert.deepEqual(contents(await search(w, '"512"')), ['Room 512 needs towels AND soap']);
});

test('any q is answered 200 or 400 VALIDATION_ERROR naming q, never a 5xx (fast-check)', async (t) => {
  const w = await setup(t, { RATE_LIMIT_STANDARD: '100000' });
  await conversation(w, ['Room 512 needs towels', 'Müller: NEAR the lift']);
  const tricky = fc.constantFrom(
    '"',
    "'",
    '*',
    ':*',
    '&',
    '|',
    '!',
    '(',
    ')',
    '-',
    '^',
    'NEAR',
    'OR',
    'AND',
    'NOT',
    ':',
    '\\',
    '<->',
    '\u0301',
    '😀',
    ' ',
  );
  const q = fc.oneof(
    fc.string({ minLength: 1, maxLength: 60 }),
    fc.string({ unit: 'binary', minLength: 1, maxLength: 60 }),
    fc
      .array(fc.oneof(tricky, fc.constantFrom('room', 'müller', 'lift', '5')), { minLength: 1, maxLength: 12 })
      .map((a) => a.join('')),
  );
  await fc.assert(
    fc.asyncProperty(q, async (text) => {
      const res = await search(w, text);
      if (res.status === 200) return;
      assertError(res, 400, 'VALIDATION_ERROR', text);
      assert.equal(res.body.error.details[0].field, 'q', text);
    }),
    { numRuns: Number(process.env.FUZZ_RUNS ?? 150), seed: 20261127 },
  );
});

test('a blank q, or none at all, is a VALIDATION_ERROR naming q; one without a word finds nothing', async (t) => {
  const w = await setup(t);
  await conversation(w, ['Room 512 needs towels']);
  for (const url of [
    '/messages/search',
    '/messages/search?q=',
    '/messages/search?q=%20%20',
    '/messages/search?q=%E3%80%80',
  ]) {
    const res = await call(w.app, 'GET', url, { token: w.manager.token });
    assertError(res, 400, 'VALIDATION_ERROR', url);
    assert.equal(res.body.error.details[0].field, 'q', url);
  }
  assertError(await search(w, 'x'.repeat(201)), 400, 'VALIDATION_ERROR');
  const none = await search(w, '"!?" * -');
  assert.equal(none.status, 200);
  assert.deepEqual(none.data, []);
  assert.deepEqual(none.body.meta, { page: 1, limit: 20, total: 0, pages: 0, nextCursor: null, capped: false });
});

test('a staff member finds only messages of conversations assigned to them', async (t) => {
  const w = await setup(t);
  const mine = await conversation(w, ['towels for room 5, mine'], { assignee: w.staff.id });
  await conversation(w, ['towels for room 6, unassigned']);
  const other = await createStaff(w.app, 'staff');
  await conversation(w, ['towels for room 7, theirs'], { assignee: other.id });

  const staffRes = await search(w, 'towels', '', w.staff.token);
  assert.equal(staffRes.status, 200);
  assert.deepEqual(contents(staffRes), ['towels for room 5, mine']);
  assert.equal(staffRes.data[0].conversationId, mine.id);
  assert.equal(staffRes.body.meta.total, 1);
  assert.equal((await search(w, 'towels', '', other.token)).body.meta.total, 1);
  // Managers and admins search everything.
  assert.equal((await search(w, 'towels', '', w.manager.token)).body.meta.total, 3);
  assert.equal((await search(w, 'towels', '', w.admin.token)).body.meta.total, 3);
  // The filters narrow a staff member's own results, never widen them.
  assert.deepEqual(contents(await search(w, 'towels', '&channel=email', w.staff.token)), ['towels for room 5, mine']);
});

test('a search narrowed to a channel or a staff member ranks its matches as the whole search does', async (t) => {
  const w = await setup(t);
  // The better match is the older one: an order by time alone would put it last.
  await conversation(w, ['late checkout, late checkout: late!', 'late checkout please', 'early checkin'], {
    assignee: w.staff.id,
  });
  await conversation(w, ['late checkout for us too'], { channel: 'web' });
  const mine = ['late checkout, late checkout: late!', 'late checkout please'];
  const whole = contents(await search(w, 'late check'));
  assert.equal(whole.length, 3);
  assert.deepEqual(
    whole.filter((c) => mine.includes(c)),
    mine,
  );
  for (const [extra, token] of [
    ['&channel=email', w.manager.token],
    ['', w.staff.token],
    ['&channel=email', w.staff.token],
  ] as const) {
    const res = await search(w, 'late check', extra, token);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(contents(res), mine, extra);
    assert.equal(res.body.meta.total, 2);
  }
  // Nothing in the window: nothing ranked, whatever the words match elsewhere.
  const none = await search(w, 'late check', '&channel=web', w.staff.token);
  assert.deepEqual(none.data, []);
  assert.deepEqual(none.body.meta, { page: 1, limit: 20, total: 0, pages: 0, nextCursor: null, capped: false });
});

test('the rank weighs how often a message says each word and its length, not how rare a word is', async (t) => {
  const w = await setup(t);
  // "taxi" is common across the store, "shuttle" rare; each message says one of them twice.
  await conversation(
    w,
    Array.from({ length: 8 }, (_, i) => `taxi to the airport at ${i}`),
  );
  await conversation(w, ['shuttle shuttle taxi', 'shuttle taxi taxi']);
  // Equal rank (a rarity weighed would put the rare word's twice first): the newer first.
  assert.deepEqual(contents(await search(w, 'shuttle taxi')), ['shuttle taxi taxi', 'shuttle shuttle taxi']);
  // The same words in a shorter message rank higher, older or not.
  await conversation(w, ['bus pass', 'bus pass, for the two of us, at the station please']);
  assert.deepEqual(contents(await search(w, 'pass bus')), [
    'bus pass',
    'bus pass, for the two of us, at the station please',
  ]);
});

test('API keys search with conversations:read (or write) and are refused without it', async (t) => {
  const w = await setup(t);
  await conversation(w, ['spare pillow please']);
  const key = async (scopes: string[]) => {
    const res = await call(w.app, 'POST', '/api-keys', { token: w.admin.token, body: { name: scopes.join(), scopes } });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return res.data.key as string;
  };
  const [read, write, guests] = await Promise.all([
    key(['conversations:read']),
    key(['conversations:write']),
    key(['guests:read']),
  ]);
  assert.deepEqual(contents(await search(w, 'pillow', '', read)), ['spare pillow please']);
  assert.deepEqual(contents(await search(w, 'pillow', '', write)), ['spare pillow please']);
  assertError(await search(w, 'pillow', '', guests), 403, 'FORBIDDEN');
  assertError(await call(w.app, 'GET', '/messages/search?q=pillow'), 401, 'TOKEN_MISSING');
});

test('results are paginated by page and limit (no cursor), ordered stably', async (t) => {
  const w = await setup(t);
  await conversation(
    w,
    Array.from({ length: 7 }, (_, i) => `wifi password request ${i}`),
  );
  const all = await search(w, 'wifi', '&limit=100');
  assert.equal(all.body.meta.total, 7);
  // Equal rank: the newer first.
  assert.deepEqual(
    contents(all),
    Array.from({ length: 7 }, (_, i) => `wifi password request ${6 - i}`),
  );
  const pages = [];
  for (let page = 1; page <= 3; page++) {
    const res = await search(w, 'wifi', `&limit=3&page=${page}`);
    assert.equal(res.status, 200);
    assert.deepEqual(res.body.meta, { page, limit: 3, total: 7, pages: 3, nextCursor: null, capped: false });
    pages.push(...contents(res));
  }
  assert.deepEqual(pages, contents(all));
  const past = await search(w, 'wifi', '&limit=3&page=9');
  assert.deepEqual(past.data, []);
  assert.equal(past.body.meta.total, 7);
  const cursor = await search(w, 'wifi', '&cursor=abc.def');
  assertError(cursor, 400, 'VALIDATION_ERROR');
  assertError(await search(w, 'wifi', '&limit=101'), 400, 'VALIDATION_ERROR');
  assertError(await search(w, 'wifi', '&page=0'), 400, 'VALIDATION_ERROR');
});

test('channel, from and to narrow the results; a bad filter is a VALIDATION_ERROR naming it', async (t) => {
  const w = await setup(t);
  await conversation(w, ['breakfast by email'], { channel: 'email' });
  const before = new Date().toISOString();
  await new Promise((r) => setTimeout(r, 5));
  const web = await conversation(w, ['breakfast on the web'], { channel: 'web' });
  const webMessage = (await search(w, 'breakfast', '&channel=web')).data;
  assert.deepEqual(
    webMessage.map((m: { content: string }) => m.content),
    ['breakfast on the web'],
  );
  assert.equal(webMessage[0].conversationId, web.id);
  assert.deepEqual(contents(await search(w, 'breakfast', '&channel=sms')), []);
  assert.deepEqual(contents(await search(w, 'breakfast', `&from=${before}`)), ['breakfast on the web']);
  assert.deepEqual(contents(await search(w, 'breakfast', `&to=${before}`)), ['breakfast by email']);
  const at = webMessage[0].createdAt as string;
  // from is inclusive, to exclusive.
  assert.deepEqual(contents(await search(w, 'breakfast', `&from=${at}&channel=web`)), ['breakfast on the web']);
  assert.deepEqual(contents(await search(w, 'breakfast', `&to=${at}&channel=web`)), []);
  // Another offset names the same instant.
  const plusOne = at
    .replace(/Z$/, '+01:00')
    .replace(/T(\d\d)/, (_, h) => `T${String((Number(h) + 1) % 24).padStart(2, '0')}`);
  if (!at.startsWith('23', 11)) {
    assert.deepEqual(contents(await search(w, 'breakfast', `&from=${encodeURIComponent(plusOne)}`)), [
      'breakfast on the web',
    ]);
  }
  for (const [extra, field] of [
    ['&channel=fax', 'channel'],
    ['&from=yesterday', 'from'],
    [`&from=${at}&to=${at}`, 'to'],
  ] as const) {
    const res = await search(w, 'breakfast', extra);
    assertError(res, 400, 'VALIDATION_ERROR', extra);
    assert.equal(res.body.error.details[0].field, field, extra);
  }
});

test('the index follows a change of content (an erasure) and the removal of messages', async (t) => {
  const w = await setup(t);
  const c = await conversation(w, ['my passport number is X1234567', 'thanks for the passport copy']);
  const db = w.app.ctx.store.db;
  await db.updateTable('messages').set({ content: '[erased]' }).where('id', '=', c.ids[0]!).execute();
  assert.deepEqual(contents(await search(w, 'passport')), ['thanks for the passport copy']);
  assert.deepEqual(contents(await search(w, 'X1234567')), []);
  assert.deepEqual(contents(await search(w, 'erased')), ['[erased]']);
  // A delivery status change leaves the index alone and the message found.
  await db.updateTable('messages').set({ delivery_status: 'failed' }).where('id', '=', c.ids[1]!).execute();
  assert.deepEqual(contents(await search(w, 'passport')), ['thanks for the passport copy']);
  await db.deleteFrom('messages').where('conversation_id', '=', c.id).execute();
  assert.deepEqual(contents(await search(w, 'passport')), []);
});

test('a search matching more than 1,000 messages ranks and counts the newest 1,000 and says it is capped', async (t) => {
  const w = await setup(t);
  const conversationId = await insertConversation(w.app, w.guestId);
  // Inserted oldest first, ids in time order, as the API writes them.
  const ids = Array.from({ length: 1003 }, () => newId('msg')).sort();
  const base = Date.parse('2026-01-01T00:00:00.000Z');
  const rows = ids.map((id, i) => ({
    id,
    conversation_id: conversationId,
    direction: 'inbound' as const,
    type: 'text' as const,
    content: `shuttle ${i}`,
    sender_type: 'guest' as const,
    sender_id: w.guestId,
    delivery_status: 'received' as const,
    created_at: new Date(base + i * 1000).toISOString(),
  }));
  for (let i = 0; i < rows.length; i += 200) {
    await w.app.ctx.store.db
      .insertInto('messages')
      .values(rows.slice(i, i + 200))
      .execute();
  }
  const last = await search(w, 'shuttle', '&limit=100&page=10');
  assert.equal(last.status, 200);
  assert.deepEqual(last.body.meta, { page: 10, limit: 100, total: 1000, pages: 10, nextCursor: null, capped: true });
  // Equal ranks, newest first: the window ends at the 1,000th newest; the three oldest are left out.
  assert.equal(last.data.at(-1).content, 'shuttle 3');
  assert.deepEqual((await search(w, 'shuttle', '&limit=100&page=11')).data, []);
  // Narrowed to the conversation's channel, the same window, the same order.
  const narrowed = await search(w, 'shuttle', '&limit=100&page=10&channel=web');
  assert.deepEqual(narrowed.body.meta, last.body.meta);
  assert.deepEqual(contents(narrowed), contents(last));
  // A narrower search finds an old one again.
  const narrow = await search(w, 'shuttle 0');
  assert.equal(narrow.body.meta.capped, false);
  assert.deepEqual(contents(narrow), ['shuttle 0']);
});

test('a hit carries the message’s files with their signed links, as reading the message does', async (t) => {
  const w = await setup(t);
  const c = await conversation(w, []);
  const file = await uploadText(w.app, w.admin.token, 'The invoice you asked for');
  const sent = await call(w.app, 'POST', `/conversations/${c.id}/messages`, {
    token: w.admin.token,
    body: { content: 'Your invoice is attached', attachments: [file.id] },
  });
  assert.equal(sent.status, 201, JSON.stringify(sent.body));
  const found = await call(w.app, 'GET', '/messages/search?q=invoice', { token: w.admin.token });
  assert.equal(found.status, 200, JSON.stringify(found.body));
  assert.deepEqual(
    found.data.map((h: { id: string; attachments: { id: string; url: string | null }[] }) => [
      h.id,
      h.attachments.map((a) => a.id),
      h.attachments.every((a) => a.url?.includes('signature=')),
    ]),
    [[sent.data.id, [file.id], true]],
  );
});

test('a reassignment moves a conversation’s messages between staff searches at once, matching what they may list', async (t) => {
  // Every member's search is compared with the admin's: more requests than one rate-limit window.
  const w = await setup(t, { RATE_LIMIT_STANDARD: '100000' });
  const other = await createStaff(w.app, 'staff');
  const a = await conversation(w, ['shuttle to the airport at 6', 'the shuttle leaves from gate B'], {
    assignee: w.staff.id,
  });
  const b = await conversation(w, ['is there a shuttle bus to town?'], { assignee: other.id, channel: 'web' });
  const c = await conversation(w, ['shuttle please, unassigned'], { channel: 'web' });
  const queries = ['shuttle', 'shut', 'the shut', 'airport'];
  // What a member may find: the admin's results for the same search, only in conversations the
  // member lists (docs/search.md: staff find only their own conversations), in the same order.
  const expected = async (own: Set<string>, q: string, extra: string) => {
    const all = await search(w, q, `${extra}&limit=100`, w.admin.token);
    return all.data.filter((m: { conversationId: string }) => own.has(m.conversationId));
  };
  // Each member's results, with and without a channel filter; returns the ids each found.
  const check = async (step: string) => {
    const found: Record<string, string[]> = {};
    for (const member of [w.staff, other]) {
      const listed = await call(w.app, 'GET', '/conversations?limit=100', { token: member.token });
      assert.equal(listed.status, 200);
      const own = new Set<string>(listed.data.map((x: { id: string }) => x.id));
      for (const q of queries) {
        for (const extra of ['', '&channel=email', '&channel=web']) {
          const res = await search(w, q, `${extra}&limit=100`, member.token);
          assert.equal(res.status, 200);
          assert.deepEqual(res.data, await expected(own, q, extra), `${step}: ${member.id} ${q} ${extra}`);
          assert.equal(res.body.meta.total, res.data.length, `${step}: ${q} ${extra}`);
        }
      }
      found[member.id] = (await search(w, 'shuttle', '&limit=100', member.token)).data.map((m: { id: string }) => m.id);
    }
    return found;
  };
  let found = await check('at first');
  assert.deepEqual(found[w.staff.id]!.sort(), [...a.ids].sort());
  assert.deepEqual(found[other.id], b.ids);

  const patch = await call(w.app, 'PATCH', `/conversations/${a.id}`, {
    token: w.manager.token,
    body: { assignee: other.id },
  });
  assert.equal(patch.status, 200);
  found = await check('after a reassignment');
  assert.deepEqual(found[w.staff.id], []);
  assert.deepEqual(found[other.id]!.sort(), [...a.ids, ...b.ids].sort());

  // A message written after the reassignment is the new assignee's; so is a changed one.
  const later = await call(w.app, 'POST', `/conversations/${a.id}/messages`, {
    token: w.admin.token,
    body: { content: 'shuttle booked for 6' },
  });
  assert.equal(later.status, 201);
  await w.app.ctx.store.db
    .updateTable('messages')
    .set({ content: 'shuttle to the airport at 7' })
    .where('id', '=', a.ids[0]!)
    .execute();
  found = await check('after a message and an edit');
  assert.equal(found[other.id]!.length, 4);

  // Bulk: one conversation unassigned, another given to the first member.
  const bulk = await call(w.app, 'PATCH', '/conversations/bulk', {
    token: w.admin.token,
    body: {
      items: [
        { id: a.id, assignee: null },
        { id: c.id, assignee: w.staff.id },
      ],
    },
  });
  assert.equal(bulk.status, 200, JSON.stringify(bulk.body));
  found = await check('after a bulk change');
  assert.deepEqual(found[w.staff.id], c.ids);
  assert.deepEqual(found[other.id], b.ids);
  // Admins still find every message, whoever holds its conversation.
  assert.equal((await search(w, 'shuttle', '', w.admin.token)).body.meta.total, 5);

  // The API never changes a conversation's channel; should the store, the index follows it.
  await w.app.ctx.store.db.updateTable('conversations').set({ channel: 'email' }).where('id', '=', b.id).execute();
  await check('after a channel change');
  assert.deepEqual(
    (await search(w, 'shuttle', '&channel=email', other.token)).data.map((m: { id: string }) => m.id),
    b.ids,
  );
  assert.deepEqual((await search(w, 'shuttle', '&channel=web', other.token)).data, []);
});

test('the recent index (PostgreSQL) finds what the whole index finds, on both sides of its cutoff', async (t) => {
  const w = await setup(t, { SEARCH_RECENT_MESSAGES: '300' });
  const web = await insertConversation(w.app, w.guestId, { channel: 'web' });
  const wa = await insertConversation(w.app, w.guestId, { channel: 'whatsapp' });
  const base = Date.parse('2026-01-01T00:00:00.000Z');
  let written = 0;
  /** `n` messages, ids in time order as the API writes them, the first `onWhatsapp` on WhatsApp. */
  const write = async (n: number, onWhatsapp = 0) => {
    const ids = Array.from({ length: n }, () => newId('msg')).sort();
    const rows = ids.map((id, i) => ({
      id,
      conversation_id: i < onWhatsapp ? wa : web,
      direction: 'inbound' as const,
      type: 'text' as const,
      content: i < onWhatsapp ? `shuttle whatsapp ${written + i}` : `shuttle ${written + i}`,
      sender_type: 'guest' as const,
      sender_id: w.guestId,
      delivery_status: 'received' as const,
      created_at: new Date(base + (written + i) * 1000).toISOString(),
    }));
    for (let i = 0; i < rows.length; i += 200) {
      await w.app.ctx.store.db
        .insertInto('messages')
        .values(rows.slice(i, i + 200))
        .execute();
    }
    written += n;
    return ids;
  };
  const queries = [
    ['shuttle', '&limit=100'],
    ['shuttle', '&limit=100&page=10'],
    ['shuttle', '&channel=whatsapp'],
    ['shuttle 7', ''],
    ['shut', '&limit=5&page=3'],
    ['shuttle', `&from=${new Date(base + 2_000).toISOString()}&to=${new Date(base + 12_000).toISOString()}`],
  ];
  const searches = () => Promise.all(queries.map(([q, extra]) => search(w, q!, extra).then((r) => r.body)));
  const indexes = async () => {
    if (w.app.ctx.store.dialect !== 'postgres') return [];
    const { rows } = await sql<{ name: string }>`
      select c.relname as name from pg_index i join pg_class c on c.oid = i.indexrelid
      where i.indrelid = 'messages'::regclass and c.relname like 'messages_search_recent_%' and i.indisvalid
      order by 1`.execute(w.app.ctx.store.db);
    return rows.map((r) => r.name);
  };
  const pg = w.app.ctx.store.dialect === 'postgres';
  const nameOf = (id: string) => `messages_search_recent_${id.slice(4)}`;

  // The WhatsApp messages are the oldest: a search narrowed to them reaches past any cutoff.
  const first = await write(1003, 5);
  const before = await searches();
  assert.equal(before[1].meta.capped, true);
  assert.equal(before[2].meta.total, 5);
  // Past twice SEARCH_RECENT_MESSAGES messages: an index from the 300th newest.
  const built = await w.app.recentSearch.maintain();
  if (pg) assert.deepEqual(built, { built: nameOf(first.at(-300)!), dropped: [], cutoff: first.at(-300)! });
  else assert.deepEqual(built, { built: null, dropped: [], cutoff: null });
  assert.deepEqual(await indexes(), pg ? [nameOf(first.at(-300)!)] : []);
  assert.deepEqual(await searches(), before);
  // 300 past its cutoff: nothing to build, nothing to drop.
  assert.deepEqual((await w.app.recentSearch.maintain()).built, null);

  // 700 past it: a newer index; the older one stays until a later run has seen the newer.
  const second = await write(400);
  const before2 = await searches();
  const rebuilt = await w.app.recentSearch.maintain();
  if (pg) assert.deepEqual(rebuilt, { built: nameOf(second.at(-300)!), dropped: [], cutoff: second.at(-300)! });
  assert.deepEqual(await indexes(), pg ? [nameOf(first.at(-300)!), nameOf(second.at(-300)!)] : []);
  assert.deepEqual(await searches(), before2);
  const later = await w.app.recentSearch.maintain();
  if (pg) assert.deepEqual(later, { built: null, dropped: [nameOf(first.at(-300)!)], cutoff: second.at(-300)! });
  assert.deepEqual(await indexes(), pg ? [nameOf(second.at(-300)!)] : []);
  assert.deepEqual(await searches(), before2);

  // An index dropped by hand while an instance still holds its cutoff: the same results, slower.
  if (pg) await sql.raw(`drop index ${nameOf(second.at(-300)!)}`).execute(w.app.ctx.store.db);
  assert.deepEqual(await searches(), before2);
});

test('a stopping instance cancels its recent index build; the next run drops what it left and builds anew', {
  timeout: 30_000,
}, async (t) => {
  if (TEST_STORE !== 'postgres') return t.skip('SQLite has no recent index');
  const url = await freshDatabaseUrl(t);
  const env = { DATABASE_URL: url, SEARCH_RECENT_MESSAGES: '2' };
  const first = await buildTestApp(t, env);
  const guestId = await insertGuest(first);
  const conversationId = await insertConversation(first, guestId);
  const message = (content: string) => ({
    id: newId('msg'),
    conversation_id: conversationId,
    direction: 'inbound' as const,
    type: 'text' as const,
    content,
    sender_type: 'guest' as const,
    sender_id: guestId,
    delivery_status: 'received' as const,
    created_at: new Date().toISOString(),
  });
  await first.ctx.store.db
    .insertInto('messages')
    .values(['one', 'two', 'three', 'four', 'five'].map(message))
    .execute();
  // A transaction writing messages, left open: a concurrent build waits for it once its index exists.
  const writer = new pg.Client({ connectionString: url });
  await writer.connect();
  // Ended here, not after the test: the database is dropped first then.
  writer.on('error', () => {});
  // Another session looks on: a transaction keeps the activity it read first.
  const observer = new pg.Client({ connectionString: url });
  await observer.connect();
  observer.on('error', () => {});
  await writer.query('begin');
  await writer.query(
    `insert into messages (id, conversation_id, direction, type, content, sender_type, sender_id, delivery_status, created_at)
     values ($1, $2, 'inbound', 'text', 'six', 'guest', $3, 'received', now())`,
    [newId('msg'), conversationId, guestId],
  );
  const build = first.recentSearch.maintain();
  build.catch(() => {});
  const waiting = async () => {
    const { rows } = await observer.query(
      `select 1 from pg_stat_activity where query ilike 'create index concurrently%' and wait_event_type = 'Lock'`,
    );
    return rows.length > 0;
  };
  for (let i = 0; i < 200 && !(await waiting()); i++) await new Promise((r) => setTimeout(r, 25));
  assert.ok(await waiting(), 'the build waits for the open transaction');

  // Closing does not wait for the build (it would wait for the writer): it is cancelled.
  const started = performance.now();
  await first.close();
  assert.ok(performance.now() - started < 5_000, 'the instance stopped without waiting for the build');
  await assert.rejects(build);
  await writer.query('rollback');
  const left = await observer.query(
    `select c.relname as name, i.indisvalid as valid from pg_index i join pg_class c on c.oid = i.indexrelid
     where c.relname like 'messages_search_recent_%'`,
  );
  assert.deepEqual(
    left.rows.map((r) => r.valid),
    [false],
  );

  const next = await buildTestApp(t, env);
  const run = await next.recentSearch.maintain();
  assert.deepEqual(run.dropped, [left.rows[0].name]);
  assert.equal(run.built, left.rows[0].name);
  const after = await observer.query(
    `select i.indisvalid as valid from pg_index i join pg_class c on c.oid = i.indexrelid
     where c.relname like 'messages_search_recent_%'`,
  );
  assert.deepEqual(
    after.rows.map((r) => r.valid),
    [true],
  );
  await Promise.all([writer.end(), observer.end()]);
});
