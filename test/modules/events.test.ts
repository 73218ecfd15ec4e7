// The outbox and the feed, through HTTP: every write path emits its events (in its transaction,
// with actor, data in API shape and changes), and GET /events resumes from a cursor and applies
// the types filter and the staff filter.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { newId } from '../../src/lib/ids.js';
import { EVENTS_LOCK } from '../../src/modules/events/outbox.js';
import { EVENT_TYPES } from '../../src/modules/events/schemas.js';
import { buildTestApp, call, createStaff, TEST_STORE, type TestUser } from '../helpers.js';
import { ROOT } from '../root.js';
import { type FeedEvent, readFeed } from './events-helpers.js';

async function setup(t: Parameters<typeof buildTestApp>[0]) {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  return { app, admin };
}

async function post(app: FastifyInstance, user: TestUser, url: string, body: unknown, status = 201) {
  const res = await call(app, 'POST', url, { token: user.token, body });
  assert.equal(res.status, status, JSON.stringify(res.body));
  return res.data;
}

async function patch(app: FastifyInstance, user: TestUser, url: string, body: unknown) {
  const res = await call(app, 'PATCH', url, { token: user.token, body });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.data;
}

const types = (events: FeedEvent[]) => events.map((e) => e.type);
const lastId = (events: FeedEvent[]) => events[events.length - 1]?.id ?? '0';

test('conversations: created + message.created, a PATCH emits updated, status_changed and assigned; a no-op nothing', async (t) => {
  const { app, admin } = await setup(t);
  const staff = await createStaff(app, 'staff');
  const guest = await post(app, admin, '/guests', { name: 'Ana Silva', phone: '+15550100001' });
  const start = lastId(await readFeed(app, admin.token));

  // On the web channel a text is sent at commit: no delivery event arrives later between the asserts.
  const cnv = await post(app, admin, '/conversations', { guestId: guest.id, channel: 'web', content: 'Welcome!' });
  let events = await readFeed(app, admin.token, '', start);
  assert.deepEqual(types(events), ['conversation.created', 'message.created']);
  const [created, message] = events as [FeedEvent, FeedEvent];
  assert.deepEqual(created.data, cnv);
  assert.deepEqual(created.actor, { type: 'staff', id: admin.id });
  assert.equal(created.changes, undefined, 'creates carry no changes');
  assert.match(created.id, /^\d+$/);
  assert.ok(Number(message.id) > Number(created.id));
  assert.equal(message.data.conversationId, cnv.id);
  assert.equal(message.data.content, 'Welcome!');

  const after = await patch(app, admin, `/conversations/${cnv.id}`, { status: 'closed', assignee: staff.id });
  events = await readFeed(app, admin.token, '', lastId(events));
  assert.deepEqual(types(events), ['conversation.updated', 'conversation.status_changed', 'conversation.assigned']);
  const [updated, status, assigned] = events as [FeedEvent, FeedEvent, FeedEvent];
  assert.deepEqual(updated.changes, {
    status: { from: 'open', to: 'closed' },
    assignee: { from: null, to: staff.id },
  });
  assert.deepEqual(updated.data, after);
  assert.deepEqual(status.changes, { status: { from: 'open', to: 'closed' } });
  assert.deepEqual(assigned.changes, { assignee: { from: null, to: staff.id } });

  // Only the status: no conversation.assigned. The same status again: nothing at all.
  await patch(app, admin, `/conversations/${cnv.id}`, { status: 'pending' });
  await patch(app, admin, `/conversations/${cnv.id}`, { status: 'pending' });
  events = await readFeed(app, admin.token, '', lastId(events));
  assert.deepEqual(types(events), ['conversation.updated', 'conversation.status_changed']);

  // Bulk: per item, and a failing item emits nothing.
  const bulk = await call(app, 'PATCH', '/conversations/bulk', {
    token: admin.token,
    body: {
      items: [
        { id: cnv.id, status: 'open' },
        { id: 'cnv_missing', status: 'open' },
      ],
    },
  });
  assert.equal(bulk.status, 200);
  events = await readFeed(app, admin.token, '', lastId(events));
  assert.deepEqual(types(events), ['conversation.updated', 'conversation.status_changed']);
});

test('an inbound message emits message.created by the guest, and status_changed when it reopens', async (t) => {
  const { app, admin } = await setup(t);
  const guest = await post(app, admin, '/guests', { name: 'Ben Okafor', phone: '+15550100002' });
  const cnv = await post(app, admin, '/conversations', { guestId: guest.id, channel: 'web' });
  await patch(app, admin, `/conversations/${cnv.id}`, { status: 'closed' });
  const start = lastId(await readFeed(app, admin.token));

  await post(app, admin, '/channels/web/inbound', { guestId: guest.id, content: 'Is breakfast included?' });
  let events = await readFeed(app, admin.token, '', start);
  assert.deepEqual(types(events), ['message.created', 'conversation.status_changed']);
  assert.deepEqual(events[0]!.actor, { type: 'guest', id: guest.id });
  assert.equal(events[0]!.data.direction, 'inbound');
  assert.deepEqual(events[1]!.changes, { status: { from: 'closed', to: 'open' } });
  assert.equal(events[1]!.data.status, 'open');

  // Already open: only the message.
  await post(app, admin, '/channels/web/inbound', { guestId: guest.id, content: 'Thanks' });
  events = await readFeed(app, admin.token, '', lastId(events));
  assert.deepEqual(types(events), ['message.created']);
});

test('guests: created (bulk per item) and updated with changes; a refused write emits nothing', async (t) => {
  const { app, admin } = await setup(t);
  const guest = await post(app, admin, '/guests', { name: 'Chloé Martin', email: 'chloe@example.com' });
  await post(app, admin, '/guests', { name: 'Copy', email: 'CHLOE@example.com' }, 409);
  const bulk = await call(app, 'POST', '/guests/bulk', {
    token: admin.token,
    body: { items: [{ name: 'One' }, { name: 'Two', email: 'chloe@example.com' }, { name: 'Three' }] },
  });
  assert.equal(bulk.status, 200);
  await patch(app, admin, `/guests/${guest.id}`, { tags: ['vip'], notes: 'Late arrival' });

  const events = await readFeed(app, admin.token);
  assert.deepEqual(types(events), ['guest.created', 'guest.created', 'guest.created', 'guest.updated']);
  assert.deepEqual(
    events.slice(1, 3).map((e) => e.data.name),
    ['One', 'Three'],
  );
  assert.deepEqual(events[3]!.changes, {
    tags: { from: [], to: ['vip'] },
    notes: { from: null, to: 'Late arrival' },
  });
});

test('tasks: created, updated, and completed on entering completed', async (t) => {
  const { app, admin } = await setup(t);
  const staff = await createStaff(app, 'staff');
  const task = await post(app, admin, '/tasks', { title: 'Fix the shower', department: 'maintenance' });
  await patch(app, admin, `/tasks/${task.id}`, { assignee: staff.id, priority: 'high' });
  await patch(app, staff, `/tasks/${task.id}`, { status: 'completed', notes: 'Done' });

  const events = await readFeed(app, admin.token);
  assert.deepEqual(types(events), ['task.created', 'task.updated', 'task.updated', 'task.completed']);
  assert.deepEqual(events[1]!.changes, {
    assignee: { from: null, to: staff.id },
    priority: { from: 'normal', to: 'high' },
  });
  const completed = events[3]!;
  assert.deepEqual(completed.actor, { type: 'staff', id: staff.id });
  assert.deepEqual(completed.changes, { status: { from: 'open', to: 'completed' } });
  assert.equal(completed.data.status, 'completed');
  assert.ok(completed.data.completedAt);
  assert.deepEqual(events[2]!.changes!.completedAt!.from, null);
});

test('knowledge: created, updated, deleted (with the entry as it was)', async (t) => {
  const { app, admin } = await setup(t);
  const entry = await post(app, admin, '/knowledge', { title: 'Wi-Fi', content: 'Network: Hotel' });
  const put = await call(app, 'PUT', `/knowledge/${entry.id}`, {
    token: admin.token,
    body: { title: 'Wi-Fi', content: 'Network: Hotel-Guest' },
  });
  assert.equal(put.status, 200);
  assert.equal((await call(app, 'DELETE', `/knowledge/${entry.id}`, { token: admin.token })).status, 200);
  assert.equal((await call(app, 'DELETE', `/knowledge/${entry.id}`, { token: admin.token })).status, 404);

  const events = await readFeed(app, admin.token);
  assert.deepEqual(types(events), ['knowledge.created', 'knowledge.updated', 'knowledge.deleted']);
  assert.deepEqual(events[1]!.changes, { content: { from: 'Network: Hotel', to: 'Network: Hotel-Guest' } });
  assert.equal(events[2]!.data.id, entry.id);
  assert.equal(events[2]!.data.content, 'Network: Hotel-Guest');
});

test('staff and settings: staff.created, staff.updated (never a password hash), setting.updated', async (t) => {
  const { app, admin } = await setup(t);
  const member = await post(app, admin, '/staff', { name: 'Dana', email: 'dana@hotel.test', role: 'staff' });
  await patch(app, admin, `/staff/${member.id}`, { role: 'manager' });
  const hotel = { name: 'Hotel Miramar', timezone: 'Europe/Lisbon', locale: 'pt-PT' };
  const put = await call(app, 'PUT', '/settings/hotel', { token: admin.token, body: { value: hotel } });
  assert.equal(put.status, 200);
  assert.equal((await call(app, 'DELETE', '/settings/hotel', { token: admin.token })).status, 200);

  const events = await readFeed(app, admin.token);
  assert.deepEqual(types(events), ['staff.created', 'staff.updated', 'setting.updated', 'setting.updated']);
  assert.equal(events[0]!.data.email, 'dana@hotel.test');
  for (const e of events.slice(0, 2)) {
    assert.equal(JSON.stringify(e.data).includes('argon2'), false);
    assert.equal('temporaryPassword' in e.data, false);
  }
  assert.deepEqual(events[1]!.changes, { role: { from: 'staff', to: 'manager' } });
  assert.equal(events[2]!.data.key, 'hotel');
  assert.deepEqual(events[2]!.changes!.value!.to, hotel);
  assert.deepEqual(events[3]!.changes!.value!.from, hotel);
});

test('the feed resumes from a cursor, pages with nextCursor/hasMore and filters by type', async (t) => {
  const { app, admin } = await setup(t);
  for (let i = 0; i < 5; i++) await post(app, admin, '/guests', { name: `Guest ${i}` });
  await post(app, admin, '/knowledge', { title: 'Parking', content: 'Garage on level -1' });

  const first = await call(app, 'GET', '/events?limit=2', { token: admin.token });
  assert.equal(first.status, 200);
  assert.equal(first.data.length, 2);
  assert.deepEqual(first.body.meta, { nextCursor: first.data[1].id, hasMore: true, limit: 2 });
  const rest = await call(app, 'GET', `/events?after=${first.body.meta.nextCursor}`, { token: admin.token });
  assert.deepEqual(
    rest.data.map((e: FeedEvent) => e.type),
    ['guest.created', 'guest.created', 'guest.created', 'knowledge.created'],
  );
  assert.equal(rest.body.meta.hasMore, false);
  // Nothing new: the cursor stays where it was.
  const none = await call(app, 'GET', `/events?after=${rest.body.meta.nextCursor}`, { token: admin.token });
  assert.deepEqual(none.data, []);
  assert.equal(none.body.meta.nextCursor, rest.body.meta.nextCursor);

  const kb = await call(app, 'GET', '/events?types=knowledge.created,task.created', { token: admin.token });
  assert.deepEqual(
    kb.data.map((e: FeedEvent) => e.type),
    ['knowledge.created'],
  );
  for (const bad of [
    'limit=0',
    'limit=101',
    'after=-1',
    'after=abc',
    'after=9999999999999999999',
    'types=guest.exploded',
    'since=1',
  ]) {
    const res = await call(app, 'GET', `/events?${bad}`, { token: admin.token });
    assert.equal(res.status, 400, bad);
    assert.equal(res.body.error.code, 'VALIDATION_ERROR', bad);
  }
  assert.equal((await call(app, 'GET', '/events')).status, 401);
});

test('a staff-role reader sees only events of conversations and tasks assigned to them; managers see all', async (t) => {
  const { app, admin } = await setup(t);
  const manager = await createStaff(app, 'manager');
  const mine = await createStaff(app, 'staff');
  const other = await createStaff(app, 'staff');
  const guest = await post(app, admin, '/guests', { name: 'Eve', phone: '+15550100007' });
  const cMine = await post(app, admin, '/conversations', { guestId: guest.id, channel: 'web', assignee: mine.id });
  await post(app, admin, '/conversations', { guestId: guest.id, channel: 'web', assignee: other.id });
  const tMine = await post(app, admin, '/tasks', { title: 'Towels', department: 'housekeeping', assignee: mine.id });
  await post(app, admin, '/tasks', { title: 'Lamp', department: 'maintenance', assignee: other.id });
  await post(app, mine, `/conversations/${cMine.id}/messages`, { content: 'On my way' });
  await post(app, admin, '/knowledge', { title: 'Spa', content: 'Opens at 9' });

  const seen = await readFeed(app, mine.token);
  assert.deepEqual(types(seen), ['conversation.created', 'task.created', 'message.created']);
  assert.equal(seen[0]!.data.id, cMine.id);
  assert.equal(seen[1]!.data.id, tMine.id);
  assert.deepEqual(types(await readFeed(app, mine.token, '&types=task.created')), ['task.created']);
  // Reassigned away: the new owner sees the change, the old one no longer does.
  await patch(app, admin, `/conversations/${cMine.id}`, { assignee: other.id });
  assert.equal((await readFeed(app, mine.token, '', lastId(seen))).length, 0);
  assert.deepEqual(types(await readFeed(app, other.token, '&types=conversation.assigned')), ['conversation.assigned']);
  assert.equal((await readFeed(app, manager.token)).length, 9);
});

test('events older than the retention are purged; younger ones stay', async (t) => {
  const { app, admin } = await setup(t);
  await post(app, admin, '/guests', { name: 'Recent' });
  const old = new Date(Date.now() - 31 * 86_400_000).toISOString();
  // A guest.created event as the API writes it: its data is the guest (the feed's schema says so).
  const guest = {
    id: newId('gst'),
    name: 'Old',
    email: null,
    phone: null,
    tags: [],
    notes: null,
    externalRef: null,
    attributes: {},
    stay: null,
  };
  await app.ctx.store.db
    .insertInto('events')
    .values({
      type: 'guest.created',
      occurred_at: old,
      actor_type: 'system',
      actor_id: null,
      conversation_id: null,
      task_id: null,
      assignee: null,
      data: JSON.stringify({ ...guest, createdAt: old, updatedAt: old }),
      changes: null,
    })
    .execute();
  assert.equal((await readFeed(app, admin.token)).length, 2);
  assert.equal(await app.eventsRuntime.purge(), 1);
  const left = await readFeed(app, admin.token);
  assert.deepEqual(
    left.map((e) => e.data.name),
    ['Recent'],
  );
});

test('a reader following the cursor during concurrent writes misses no event', async (t) => {
  const app = await buildTestApp(t, { RATE_LIMIT_STANDARD: '100000' });
  const admin = await createStaff(app, 'admin');
  const seen: FeedEvent[] = [];
  let cursor = '0';
  let writing = true;
  const reader = (async () => {
    while (writing || seen.length < 40) {
      const res = await call(app, 'GET', `/events?after=${cursor}&limit=100`, { token: admin.token });
      assert.equal(res.status, 200);
      seen.push(...(res.data as FeedEvent[]));
      cursor = res.body.meta.nextCursor;
      if (!writing && res.data.length === 0) break;
      // inject on SQLite can complete in microtasks alone: yield, or the writers never run.
      await new Promise((r) => setTimeout(r, 2));
    }
  })();
  // Concurrent transactions: on PostgreSQL their events must still become visible in id order.
  await Promise.all(
    Array.from({ length: 40 }, (_, i) => call(app, 'POST', '/guests', { token: admin.token, body: { name: `C${i}` } })),
  );
  writing = false;
  await reader;
  assert.equal(seen.length, 40);
  assert.equal(new Set(seen.map((e) => e.data.name)).size, 40);
});

test('PostgreSQL: a writer draws its event id only once it holds the events lock', {
  skip: TEST_STORE !== 'postgres' && 'PostgreSQL only: SQLite has one writer at a time',
}, async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  // Another writer holds the lock first and draws its id only after the API's write has
  // started: the API's event must come after it. Had the API drawn its id before waiting for
  // the lock, its smaller id would commit later than the other's, and a reader already past the
  // other's id would never see it.
  let posted: Promise<Awaited<ReturnType<typeof call>>> | undefined;
  const otherId = await app.ctx.store.db.transaction().execute(async (trx) => {
    await sql`select pg_advisory_xact_lock(${sql.lit(EVENTS_LOCK)})`.execute(trx);
    posted = call(app, 'POST', '/guests', { token: admin.token, body: { name: 'Waits For The Lock' } });
    // Long enough for the API's transaction to reach its first event and wait there.
    await new Promise((r) => setTimeout(r, 300));
    const row = await trx
      .insertInto('events')
      .values({
        type: 'guest.updated',
        occurred_at: new Date().toISOString(),
        actor_type: 'system',
        actor_id: null,
        conversation_id: null,
        task_id: null,
        assignee: null,
        data: '{}',
        changes: null,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    return Number(row.id);
  });
  const res = await posted!;
  assert.equal(res.status, 201, res.raw.body);
  // Read from the table: the other writer's row is not an event the feed's schema describes.
  const mine = await app.ctx.store.db
    .selectFrom('events')
    .select('id')
    .where('type', '=', 'guest.created')
    .executeTakeFirstOrThrow();
  assert.ok(Number(mine.id) > otherId, `the API's event ${mine.id} comes after the lock holder's ${otherId}`);
});

test('docs/events.md lists every event type the API emits', () => {
  const doc = readFileSync(join(ROOT, 'docs/events.md'), 'utf8');
  const table = doc.slice(doc.indexOf('## Event types'));
  // A row names a type in full (`knowledge.created`) or as a sibling of the one before it (`.updated`).
  const named = new Set<string>();
  for (const row of table.split('\n').filter((l) => l.startsWith('| `'))) {
    const cell = row.split('|')[1]!;
    let last = '';
    for (const [, t] of cell.matchAll(/`([a-z_.]+)`/g)) {
      const full = t!.startsWith('.') ? `${last.split('.')[0]}${t}` : t!;
      named.add(full);
      last = full;
    }
  }
  assert.deepEqual(
    EVENT_TYPES.filter((t) => !named.has(t)),
    [],
  );
});
