// Suggestions (docs/productivity.md): the knowledge entries and canned responses that best answer
// the guest's latest message, ranked, to whoever may read the conversation.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { assertError } from '../fixtures.js';
import { buildTestApp, call, createStaff, type TestUser } from '../helpers.js';

interface Desk {
  app: FastifyInstance;
  admin: TestUser;
  staff: TestUser;
  ids: Record<string, string>;
}

async function desk(t: Parameters<typeof buildTestApp>[0]): Promise<Desk> {
  const app = await buildTestApp(t);
  const [admin, staff] = await Promise.all([createStaff(app, 'admin'), createStaff(app, 'staff')]);
  const ids: Record<string, string> = {};
  const post = async (url: string, name: string, body: Record<string, unknown>) => {
    const res = await call(app, 'POST', url, { token: admin.token, body });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    ids[name] = res.data.id;
  };
  await post('/knowledge', 'checkout', {
    title: 'Check-out time',
    content: 'Check-out is at 11:00. A late check-out until 14:00 can be arranged at the front desk.',
    category: 'front-desk',
  });
  await post('/knowledge', 'breakfast', {
    title: 'Breakfast',
    content: 'Breakfast is served from 7:00 to 10:30 in the garden restaurant.',
    category: 'dining',
  });
  await post('/knowledge', 'bar', {
    title: 'Pool bar',
    content: 'The pool bar serves drinks and light meals until late; breakfast is not served there.',
    category: 'dining',
  });
  await post('/knowledge', 'restaurant', {
    title: 'Restaurant',
    content: 'Dinner in the garden restaurant from 19:00; breakfast on the terrace when it is sunny.',
    category: 'dining',
  });
  await post('/knowledge', 'spa', { title: 'Spa', content: 'The spa opens at 9:00.', category: 'wellness' });
  // A knowledge base holds far more than the entries a message is about: a word found in most of a
  // tiny one would tell nothing apart (bm25 weighs a word by how rare it is).
  for (const topic of ['Parking', 'Gym', 'Laundry', 'Taxi', 'Pets', 'Towels', 'Safe', 'Minibar']) {
    await post('/knowledge', topic, { title: topic, content: `${topic}: ask reception.`, category: 'general' });
  }
  await post('/canned-responses', 'late', {
    shortcode: 'late_checkout',
    title: 'Late check-out offer',
    content: 'Hello {{guest.firstName}}, a late check-out at 14:00 is yours.',
  });
  await post('/canned-responses', 'wifi', { shortcode: 'wifi', title: 'Wi-Fi', content: 'The network is Guest.' });
  return { app, admin, staff, ids };
}

/** The guest writes on the web channel; returns the conversation it landed in. */
async function guestWrites(d: Desk, guestId: string, content: string): Promise<string> {
  const res = await call(d.app, 'POST', '/channels/web/inbound', {
    token: d.admin.token,
    body: { guestId, content, externalId: `w-${Math.random()}` },
  });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.data.message.conversationId;
}

const suggestions = async (d: Desk, id: string, token = d.admin.token) => {
  const res = await call(d.app, 'GET', `/conversations/${id}/suggestions`, { token });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.data as {
    knowledge: { id: string; title: string; category: string; score: number }[];
    cannedResponses: { id: string; shortcode: string; title: string; score: number }[];
  };
};

test('suggestions answer the guest’s latest message, best first, scored, at most 3 of each', async (t) => {
  const d = await desk(t);
  const guest = await call(d.app, 'POST', '/guests', {
    token: d.admin.token,
    body: { name: 'Ana Lopes', email: 'ana@example.test' },
  });
  const conversation = await call(d.app, 'POST', '/conversations', {
    token: d.admin.token,
    body: { guestId: guest.data.id, channel: 'web', assignee: d.staff.id },
  });
  const id = conversation.data.id as string;
  // Before the guest writes there is nothing to answer.
  assert.deepEqual(await suggestions(d, id), { knowledge: [], cannedResponses: [] });

  assert.equal(await guestWrites(d, guest.data.id, 'Hi! Can I have a LATE check-out tomorrow, please?'), id);
  const late = await suggestions(d, id, d.staff.token);
  assert.equal(late.knowledge[0]?.id, d.ids.checkout);
  assert.deepEqual(late.knowledge[0], {
    id: d.ids.checkout,
    title: 'Check-out time',
    category: 'front-desk',
    score: late.knowledge[0]!.score,
  });
  assert.deepEqual(
    late.cannedResponses.map((c) => [c.id, c.shortcode, c.title]),
    [[d.ids.late, 'late_checkout', 'Late check-out offer']],
  );
  // Entries matching no word of the message are left out; scores are positive, best first.
  assert.ok(!late.knowledge.some((k) => k.id === d.ids.spa || k.id === d.ids.breakfast));
  for (const list of [late.knowledge, late.cannedResponses]) {
    const scores = list.map((x) => x.score);
    assert.ok(
      scores.every((s) => s > 0),
      String(scores),
    );
    assert.deepEqual(
      scores,
      [...scores].sort((a, b) => b - a),
    );
  }

  // A staff reply changes nothing; the guest's next message does. Four entries match: three are shown.
  await call(d.app, 'POST', `/conversations/${id}/messages`, {
    token: d.staff.token,
    body: { content: 'Wi-Fi details coming' },
  });
  await guestWrites(d, guest.data.id, 'And when is breakfast served?');
  const breakfast = await suggestions(d, id);
  assert.equal(breakfast.knowledge.length, 3);
  assert.equal(breakfast.knowledge[0]?.id, d.ids.breakfast);
  assert.deepEqual(breakfast.cannedResponses, []);
});

test('suggestions follow the conversation’s access: 403 for someone else’s, 404 for none, API keys read', async (t) => {
  const d = await desk(t);
  const guest = await call(d.app, 'POST', '/guests', { token: d.admin.token, body: { name: 'Rui' } });
  const id = await guestWrites(d, guest.data.id, 'Is the spa open?');
  assertError(await call(d.app, 'GET', `/conversations/${id}/suggestions`, { token: d.staff.token }), 403, 'FORBIDDEN');
  assertError(
    await call(d.app, 'GET', '/conversations/cnv_01jd8x3k5q7w9e2r4t6y8v0m1n/suggestions', { token: d.admin.token }),
    404,
    'NOT_FOUND',
  );
  const key = await call(d.app, 'POST', '/api-keys', {
    token: d.admin.token,
    body: { name: 'Desk app', scopes: ['conversations:read'] },
  });
  const byKey = await suggestions(d, id, key.data.key);
  assert.deepEqual(
    byKey.knowledge.map((k) => k.id),
    [d.ids.spa],
  );
  // Words that are only query syntax or stop words match nothing, and never fail.
  await guestWrites(d, guest.data.id, '"the" OR NEAR(* -) AND: {{ }}');
  assert.deepEqual(await suggestions(d, id), { knowledge: [], cannedResponses: [] });
});
