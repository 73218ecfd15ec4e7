import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance } from 'fastify';
import { insertGuest, openConversation } from '../fixtures.js';
import { buildTestApp, call, createStaff } from '../helpers.js';
import { sharedStore, until } from './jobs-helpers.js';

async function setup(t: TestContext, app?: FastifyInstance) {
  app ??= await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const guestId = await insertGuest(app);
  const conversation = await openConversation(app, admin.token, { guestId, channel: 'web' });
  return { app, admin, guestId, id: conversation.id as string };
}

const inSeconds = (s: number) => new Date(Date.now() + s * 1000).toISOString();

/** The conversation.updated events of `id` whose actor is the system (the wake-ups). */
async function wakeEvents(app: FastifyInstance, token: string, id: string) {
  const res = await call(app, 'GET', '/events?types=conversation.updated&limit=100', { token });
  assert.equal(res.status, 200);
  // biome-ignore lint/suspicious/noExplicitAny: the feed's JSON.
  return res.data.filter((e: any) => e.data.id === id && e.actor.type === 'system');
}

const fields = (res: { body: { error: { details: { field: string }[] } } }) =>
  res.body.error.details.map((d) => d.field);

test('a snoozed conversation opens again at its moment, at most 5 s late, with one system event', async (t) => {
  const { app, admin, id } = await setup(t);
  const until_ = inSeconds(1.5);
  const res = await call(app, 'PATCH', `/conversations/${id}`, {
    token: admin.token,
    body: { status: 'pending', snoozedUntil: until_ },
  });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.equal(res.data.status, 'pending');
  assert.equal(res.data.snoozedUntil, until_);
  await sleep(800);
  assert.equal((await call(app, 'GET', `/conversations/${id}`, { token: admin.token })).data.status, 'pending');
  let woken: { status: string; snoozedUntil: string | null; updatedAt: string } | undefined;
  await until(
    async () => {
      woken = (await call(app, 'GET', `/conversations/${id}`, { token: admin.token })).data;
      return woken!.status === 'open';
    },
    7000,
    'the conversation to wake',
  );
  assert.equal(woken!.snoozedUntil, null);
  const late = Date.parse(woken!.updatedAt) - Date.parse(until_);
  t.diagnostic(`woken ${late} ms after its moment`);
  assert.ok(late >= 0 && late <= 5000, `woken ${late} ms after its moment`);
  await sleep(500);
  const events = await wakeEvents(app, admin.token, id);
  assert.equal(events.length, 1, 'one conversation.updated by the system');
  assert.deepEqual(events[0].changes, {
    status: { from: 'pending', to: 'open' },
    snoozedUntil: { from: until_, to: null },
  });
});

test('snoozedUntil must be a future moment at most 90 days ahead, sent with status pending', async (t) => {
  const { app, admin, id } = await setup(t);
  const patch = (body: object) => call(app, 'PATCH', `/conversations/${id}`, { token: admin.token, body });
  for (const body of [
    { status: 'pending', snoozedUntil: inSeconds(-60) },
    { status: 'pending', snoozedUntil: inSeconds(91 * 86_400) },
    { status: 'open', snoozedUntil: inSeconds(60) },
    { snoozedUntil: inSeconds(60) },
    { status: 'pending', snoozedUntil: 'tomorrow' },
  ]) {
    const res = await patch(body);
    assert.equal(res.status, 400, JSON.stringify(body));
    assert.equal(res.body.error.code, 'VALIDATION_ERROR');
    assert.ok(fields(res).includes('snoozedUntil'), JSON.stringify(res.body));
  }
  const ok = await patch({ status: 'pending', snoozedUntil: inSeconds(89 * 86_400) });
  assert.equal(ok.status, 200, JSON.stringify(ok.body));
});

test('a guest message wakes a snoozed conversation at once; its moment then changes nothing', async (t) => {
  const { app, admin, guestId, id } = await setup(t);
  const snoozed = await call(app, 'PATCH', `/conversations/${id}`, {
    token: admin.token,
    body: { status: 'pending', snoozedUntil: inSeconds(1.2) },
  });
  assert.equal(snoozed.status, 200);
  const inbound = await call(app, 'POST', '/channels/web/inbound', {
    token: admin.token,
    body: { guestId, content: 'Are you there?', externalId: `w-${Date.now()}` },
  });
  assert.equal(inbound.status, 201, JSON.stringify(inbound.body));
  const after = (await call(app, 'GET', `/conversations/${id}`, { token: admin.token })).data;
  assert.equal(after.status, 'open');
  assert.equal(after.snoozedUntil, null);
  const changed = await call(app, 'GET', '/events?types=conversation.status_changed', { token: admin.token });
  // biome-ignore lint/suspicious/noExplicitAny: the feed's JSON.
  const byGuest = changed.data.filter((e: any) => e.data.id === id && e.actor.type === 'guest');
  assert.deepEqual(
    byGuest.map((e: { changes: unknown }) => e.changes),
    [{ status: { from: 'pending', to: 'open' } }],
  );
  // Closed meanwhile by staff: the old moment must not reopen it.
  await call(app, 'PATCH', `/conversations/${id}`, { token: admin.token, body: { status: 'closed' } });
  await sleep(2500);
  assert.equal((await call(app, 'GET', `/conversations/${id}`, { token: admin.token })).data.status, 'closed');
  assert.equal((await wakeEvents(app, admin.token, id)).length, 0);
});

test('any status change ends a snooze; null un-snoozes; a pending conversation without one stays pending when the guest writes', async (t) => {
  const { app, admin, guestId, id } = await setup(t);
  const patch = (body: object) => call(app, 'PATCH', `/conversations/${id}`, { token: admin.token, body });
  assert.equal((await patch({ status: 'pending', snoozedUntil: inSeconds(1) })).status, 200);
  const closed = await patch({ status: 'closed' });
  assert.equal(closed.data.snoozedUntil, null);
  const again = await patch({ status: 'pending', snoozedUntil: inSeconds(1) });
  assert.equal(again.data.snoozedUntil !== null, true);
  const unsnoozed = await patch({ snoozedUntil: null });
  assert.equal(unsnoozed.status, 200);
  assert.deepEqual([unsnoozed.data.status, unsnoozed.data.snoozedUntil], ['pending', null]);
  await sleep(2200);
  assert.equal((await call(app, 'GET', `/conversations/${id}`, { token: admin.token })).data.status, 'pending');
  assert.equal((await wakeEvents(app, admin.token, id)).length, 0);
  await call(app, 'POST', '/channels/web/inbound', {
    token: admin.token,
    body: { guestId, content: 'Hello?', externalId: `w2-${Date.now()}` },
  });
  assert.equal((await call(app, 'GET', `/conversations/${id}`, { token: admin.token })).data.status, 'pending');
});

test("a staff member may snooze their own conversations, not another's", async (t) => {
  const app = await buildTestApp(t);
  const staff = await createStaff(app, 'staff');
  const other = await createStaff(app, 'staff');
  const guestId = await insertGuest(app);
  const mine = await openConversation(app, staff.token, { guestId, channel: 'web' });
  const theirs = await openConversation(app, other.token, { guestId, channel: 'web' });
  const body = { status: 'pending', snoozedUntil: inSeconds(3600) };
  const ok = await call(app, 'PATCH', `/conversations/${mine.id}`, { token: staff.token, body });
  assert.equal(ok.status, 200, JSON.stringify(ok.body));
  const refused = await call(app, 'PATCH', `/conversations/${theirs.id}`, { token: staff.token, body });
  assert.equal(refused.status, 403);
});

test('a moment that passed while no instance ran wakes the conversation once, at start', async (t) => {
  const store = await sharedStore(t);
  const first = await store.start();
  const { admin, id } = await setup(t, first);
  const res = await call(first, 'PATCH', `/conversations/${id}`, {
    token: admin.token,
    body: { status: 'pending', snoozedUntil: inSeconds(1) },
  });
  assert.equal(res.status, 200);
  await first.close();
  await sleep(1500);
  // Two instances start after the moment: the conversation is woken once, by one of them.
  const [a, b] = [await store.start(), await store.start()];
  await until(
    async () => (await call(a, 'GET', `/conversations/${id}`, { token: admin.token })).data.status === 'open',
    5000,
    'the conversation to wake after the restart',
  );
  await sleep(500);
  assert.equal((await wakeEvents(b, admin.token, id)).length, 1);
});
