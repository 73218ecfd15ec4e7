import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { newId } from '../../src/lib/ids.js';
import { insertGuest, openConversation } from '../fixtures.js';
import { assertPagesAgree, buildTestApp, call, createStaff, settledMessage } from '../helpers.js';

async function setup(t: TestContext) {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const guestId = await insertGuest(app);
  const open = (body: Record<string, unknown> = {}, token = admin.token) =>
    openConversation(app, token, { guestId, channel: 'web', ...body });
  return { app, admin, guestId, open };
}

const fields = (res: { body: { error: { details: { field: string }[] } } }) =>
  res.body.error.details.map((d) => d.field);

test('creating a conversation with a first message stores it as an outbound text from the caller', async (t) => {
  const { app, admin, guestId } = await setup(t);
  const res = await call(app, 'POST', '/conversations', {
    token: admin.token,
    body: { guestId, channel: 'sms', subject: 'Late check-out', content: 'Hello from the front desk' },
  });
  assert.equal(res.status, 201);
  const c = res.data;
  assert.match(c.id, /^cnv_[0-9a-z]{26}$/);
  assert.deepEqual(
    { ...c, id: undefined, createdAt: undefined, updatedAt: undefined, lastMessageAt: undefined },
    {
      id: undefined,
      guestId,
      guest: { id: guestId, name: 'Ana Guest' },
      channel: 'sms',
      status: 'open',
      assignee: null,
      subject: 'Late check-out',
      messageCount: 1,
      labels: [],
      stay: null,
      sla: null,
      createdAt: undefined,
      updatedAt: undefined,
      lastMessageAt: undefined,
      snoozedUntil: null,
    },
  );
  assert.equal(c.lastMessageAt, c.createdAt);

  const messages = await call(app, 'GET', `/conversations/${c.id}/messages`, { token: admin.token });
  assert.equal(messages.status, 200);
  assert.equal(messages.data.length, 1);
  assert.deepEqual(
    { ...messages.data[0], id: undefined },
    {
      id: undefined,
      conversationId: c.id,
      direction: 'outbound',
      type: 'text',
      content: 'Hello from the front desk',
      sender: { type: 'staff', id: admin.id },
      deliveryStatus: messages.data[0].deliveryStatus,
      externalId: null,
      error: messages.data[0].error,
      sentAt: null,
      deliveredAt: null,
      readAt: null,
      attachments: [],
      createdAt: c.createdAt,
    },
  );
  // Queued at commit; no WhatsApp provider is configured here, so delivery then fails it, saying why.
  assert.ok(['queued', 'failed'].includes(messages.data[0].deliveryStatus));
  const settled = await settledMessage(app, admin.token, c.id, messages.data[0].id);
  assert.equal(settled.deliveryStatus, 'failed');
  assert.deepEqual(settled.error, {
    code: 'CHANNEL_NOT_CONFIGURED',
    message: 'no provider is configured for the sms channel',
  });
});

test('a conversation created without content has no messages and its creation time as last activity', async (t) => {
  const { app, admin, open } = await setup(t);
  const c = await open();
  assert.equal(c.messageCount, 0);
  assert.equal(c.subject, null);
  assert.equal(c.lastMessageAt, c.createdAt);
  const messages = await call(app, 'GET', `/conversations/${c.id}/messages`, { token: admin.token });
  assert.deepEqual(messages.data, []);
  assert.equal(messages.body.meta.total, 0);
});

test('creating a conversation rejects a missing guest, a bad assignee, a bad channel and unknown fields', async (t) => {
  const { app, admin, guestId } = await setup(t);
  const post = (body: unknown) => call(app, 'POST', '/conversations', { token: admin.token, body });

  const noGuest = await post({ guestId: newId('gst'), channel: 'web' });
  assert.equal(noGuest.status, 400);
  assert.equal(noGuest.body.error.code, 'VALIDATION_ERROR');
  assert.deepEqual(fields(noGuest), ['guestId']);

  const unknownAssignee = await post({ guestId, channel: 'web', assignee: newId('stf') });
  assert.equal(unknownAssignee.status, 400);
  assert.deepEqual(fields(unknownAssignee), ['assignee']);

  const gone = await createStaff(app, 'staff');
  assert.equal(
    (await call(app, 'PATCH', `/staff/${gone.id}`, { token: admin.token, body: { active: false } })).status,
    200,
  );
  const inactive = await post({ guestId, channel: 'web', assignee: gone.id });
  assert.equal(inactive.status, 400);
  assert.deepEqual(fields(inactive), ['assignee']);

  const both = await post({ guestId: newId('gst'), channel: 'web', assignee: gone.id });
  assert.deepEqual(fields(both).sort(), ['assignee', 'guestId']);

  const badChannel = await post({ guestId, channel: 'pigeon' });
  assert.equal(badChannel.status, 400);
  assert.deepEqual(badChannel.body.error.details, [
    { field: 'channel', message: 'must be one of: whatsapp, sms, email, web' },
  ]);

  const unknownField = await post({ guestId, channel: 'web', status: 'closed' });
  assert.equal(unknownField.status, 400);
  assert.deepEqual(fields(unknownField), ['status']);

  const missing = await post({});
  assert.deepEqual(fields(missing).sort(), ['channel', 'guestId']);

  const longSubject = await post({ guestId, channel: 'web', subject: 'x'.repeat(201) });
  assert.deepEqual(fields(longSubject), ['subject']);

  const emptyContent = await post({ guestId, channel: 'web', content: '' });
  assert.deepEqual(fields(emptyContent), ['content']);

  const list = await call(app, 'GET', '/conversations', { token: admin.token });
  assert.equal(list.body.meta.total, 0, 'no failed create left a conversation behind');
});

test('a staff member creates conversations assigned to themselves and no one else', async (t) => {
  const { app, admin, guestId, open } = await setup(t);
  const staff = await createStaff(app, 'staff');
  const other = await createStaff(app, 'staff');

  assert.equal((await open({}, staff.token)).assignee, staff.id);
  assert.equal((await open({ assignee: staff.id }, staff.token)).assignee, staff.id);
  for (const assignee of [other.id, null]) {
    const res = await call(app, 'POST', '/conversations', {
      token: staff.token,
      body: { guestId, channel: 'sms', assignee },
    });
    assert.equal(res.status, 403);
    assert.equal(res.body.error.code, 'FORBIDDEN');
  }

  assert.equal((await open({}, admin.token)).assignee, null, 'admin default is unassigned');
  assert.equal((await open({ assignee: other.id }, admin.token)).assignee, other.id);
  const manager = await createStaff(app, 'manager');
  assert.equal((await open({}, manager.token)).assignee, null);
});

test('the list filters by status, channel, assignee and unassigned', async (t) => {
  const { app, admin, open } = await setup(t);
  const staff = await createStaff(app, 'staff');
  const a = await open({ channel: 'whatsapp', assignee: staff.id });
  const b = await open({ channel: 'sms' });
  const c = await open({ channel: 'sms', assignee: staff.id });
  await call(app, 'PATCH', `/conversations/${b.id}`, { token: admin.token, body: { status: 'closed' } });

  const ids = async (query: string) => {
    const res = await call(app, 'GET', `/conversations${query}`, { token: admin.token });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return res.data.map((x: { id: string }) => x.id);
  };
  assert.deepEqual(await ids(''), [c.id, b.id, a.id]);
  assert.deepEqual(await ids('?status=closed'), [b.id]);
  assert.deepEqual(await ids('?status=open'), [c.id, a.id]);
  assert.deepEqual(await ids('?channel=sms'), [c.id, b.id]);
  assert.deepEqual(await ids(`?assignee=${staff.id}`), [c.id, a.id]);
  assert.deepEqual(await ids('?assignee=unassigned'), [b.id]);
  assert.deepEqual(await ids(`?assignee=${staff.id}&channel=whatsapp&status=open`), [a.id]);
  assert.deepEqual(await ids('?status=pending'), []);

  const bad = await call(app, 'GET', '/conversations?status=archived', { token: admin.token });
  assert.equal(bad.status, 400);
  assert.deepEqual(fields(bad), ['status']);
  const unknown = await call(app, 'GET', '/conversations?sort=id', { token: admin.token });
  assert.equal(unknown.status, 400);
});

test('the list puts the latest activity first: a new message moves an older conversation to the top', async (t) => {
  const { app, admin, open } = await setup(t);
  const first = await open();
  await sleep(3);
  const second = await open();
  await sleep(3);
  const third = await open();
  const order = async () =>
    (await call(app, 'GET', '/conversations', { token: admin.token })).data.map((x: { id: string }) => x.id);
  assert.deepEqual(await order(), [third.id, second.id, first.id]);

  await sleep(3);
  const sent = await call(app, 'POST', `/conversations/${first.id}/messages`, {
    token: admin.token,
    body: { content: 'Your room is ready' },
  });
  assert.equal(sent.status, 201);
  assert.deepEqual(await order(), [first.id, third.id, second.id]);
});

test('the list is paginated with meta, and a page past the end is empty', async (t) => {
  const { app, admin, open } = await setup(t);
  const made = [];
  for (let i = 0; i < 5; i++) made.push((await open()).id);
  const newestFirst = made.reverse();

  const page2 = await call(app, 'GET', '/conversations?page=2&limit=2', { token: admin.token });
  assert.deepEqual(
    { ...page2.body.meta, nextCursor: typeof page2.body.meta.nextCursor },
    { page: 2, limit: 2, total: 5, pages: 3, nextCursor: 'string' },
  );
  assert.deepEqual(
    page2.data.map((x: { id: string }) => x.id),
    newestFirst.slice(2, 4),
  );

  const past = await call(app, 'GET', '/conversations?page=4&limit=2', { token: admin.token });
  assert.equal(past.status, 200);
  assert.deepEqual(past.data, []);
  assert.deepEqual(past.body.meta, { page: 4, limit: 2, total: 5, pages: 3, nextCursor: null });

  const defaults = await call(app, 'GET', '/conversations', { token: admin.token });
  assert.deepEqual(defaults.body.meta, { page: 1, limit: 20, total: 5, pages: 1, nextCursor: null });

  await assertPagesAgree(app, admin.token, '/conversations', newestFirst);

  for (const q of ['limit=0', 'limit=101', 'page=0', 'page=x']) {
    const res = await call(app, 'GET', `/conversations?${q}`, { token: admin.token });
    assert.equal(res.status, 400, q);
    assert.equal(res.body.error.code, 'VALIDATION_ERROR');
  }
});

test('getting a conversation returns it, and an unknown id is 404', async (t) => {
  const { app, admin, open } = await setup(t);
  const c = await open({ subject: 'Spa booking' });
  const res = await call(app, 'GET', `/conversations/${c.id}`, { token: admin.token });
  assert.equal(res.status, 200);
  assert.deepEqual(res.data, c);
  const missing = await call(app, 'GET', `/conversations/${newId('cnv')}`, { token: admin.token });
  assert.equal(missing.status, 404);
  assert.equal(missing.body.error.code, 'NOT_FOUND');
  const noToken = await call(app, 'GET', `/conversations/${c.id}`);
  assert.equal(noToken.status, 401);
  assert.equal(noToken.body.error.code, 'TOKEN_MISSING');
});

test('a staff member lists only conversations assigned to them, whatever the filter', async (t) => {
  const { app, open } = await setup(t);
  const staff = await createStaff(app, 'staff');
  const other = await createStaff(app, 'staff');
  const mine = await open({ assignee: staff.id });
  const theirs = await open({ assignee: other.id });
  await open();

  const list = async (query: string) => {
    const res = await call(app, 'GET', `/conversations${query}`, { token: staff.token });
    assert.equal(res.status, 200);
    return res;
  };
  const all = await list('');
  assert.deepEqual(
    all.data.map((x: { id: string }) => x.id),
    [mine.id],
  );
  assert.equal(all.body.meta.total, 1);
  assert.deepEqual((await list(`?assignee=${other.id}`)).data, []);
  assert.deepEqual((await list('?assignee=unassigned')).data, []);

  const manager = await createStaff(app, 'manager');
  const seen = await call(app, 'GET', '/conversations', { token: manager.token });
  assert.equal(seen.body.meta.total, 3, 'a manager sees every conversation');
  const got = await call(app, 'GET', `/conversations/${theirs.id}`, { token: manager.token });
  assert.equal(got.status, 200);
});

test('a staff member cannot read a conversation assigned to someone else; a missing one is 404', async (t) => {
  const { app, open } = await setup(t);
  const staff = await createStaff(app, 'staff');
  const other = await createStaff(app, 'staff');
  const mine = await open({ assignee: staff.id });
  const theirs = await open({ assignee: other.id });
  const unassigned = await open();

  assert.equal((await call(app, 'GET', `/conversations/${mine.id}`, { token: staff.token })).status, 200);
  for (const c of [theirs, unassigned]) {
    const res = await call(app, 'GET', `/conversations/${c.id}`, { token: staff.token });
    assert.equal(res.status, 403);
    assert.equal(res.body.error.code, 'FORBIDDEN');
  }
  const missing = await call(app, 'GET', `/conversations/${newId('cnv')}`, { token: staff.token });
  assert.equal(missing.status, 404);
});

test('updating a conversation changes status, assigns and unassigns', async (t) => {
  const { app, admin, open } = await setup(t);
  const staff = await createStaff(app, 'staff');
  const c = await open();
  const patch = (body: unknown) => call(app, 'PATCH', `/conversations/${c.id}`, { token: admin.token, body });

  await sleep(2);
  const closed = await patch({ status: 'closed' });
  assert.equal(closed.status, 200);
  assert.equal(closed.data.status, 'closed');
  assert.ok(closed.data.updatedAt > c.updatedAt);
  assert.equal(closed.data.lastMessageAt, c.lastMessageAt, 'a status change is not message activity');

  assert.equal((await patch({ status: 'pending' })).data.status, 'pending');
  assert.equal((await patch({ status: 'open' })).data.status, 'open');
  assert.equal((await patch({ status: 'closed' })).data.status, 'closed');
  assert.equal((await patch({ status: 'pending' })).data.status, 'pending', 'closed may move to pending');

  const assigned = await patch({ assignee: staff.id, status: 'open' });
  assert.equal(assigned.status, 200);
  assert.equal(assigned.data.assignee, staff.id);
  assert.equal(assigned.data.status, 'open');
  const got = await call(app, 'GET', `/conversations/${c.id}`, { token: staff.token });
  assert.equal(got.status, 200, 'the new assignee can now read it');

  const unassigned = await patch({ assignee: null });
  assert.equal(unassigned.data.assignee, null);
  assert.equal((await call(app, 'GET', `/conversations/${c.id}`, { token: staff.token })).status, 403);
});

test('an update must name an active staff member, at least one known field, and an existing conversation', async (t) => {
  const { app, admin, open } = await setup(t);
  const c = await open();
  const patch = (body: unknown, id = c.id) => call(app, 'PATCH', `/conversations/${id}`, { token: admin.token, body });

  const gone = await createStaff(app, 'staff');
  await call(app, 'PATCH', `/staff/${gone.id}`, { token: admin.token, body: { active: false } });
  for (const assignee of [gone.id, newId('stf')]) {
    const res = await patch({ assignee });
    assert.equal(res.status, 400);
    assert.deepEqual(fields(res), ['assignee']);
  }
  assert.equal((await patch({})).status, 400);
  assert.deepEqual(fields(await patch({ status: 'archived' })), ['status']);
  assert.deepEqual(fields(await patch({ subject: 'New' })), ['subject']);
  assert.equal((await patch({ status: 'closed' }, newId('cnv'))).status, 404);

  const after = await call(app, 'GET', `/conversations/${c.id}`, { token: admin.token });
  assert.deepEqual(after.data, c, 'failed updates changed nothing');
});

test('a staff member may change the status of their own conversation but never the assignee', async (t) => {
  const { app, open } = await setup(t);
  const staff = await createStaff(app, 'staff');
  const other = await createStaff(app, 'staff');
  const mine = await open({ assignee: staff.id });
  const theirs = await open({ assignee: other.id });
  const patch = (id: string, body: unknown) => call(app, 'PATCH', `/conversations/${id}`, { token: staff.token, body });

  const closed = await patch(mine.id, { status: 'closed' });
  assert.equal(closed.status, 200);
  assert.equal(closed.data.status, 'closed');

  for (const body of [
    { assignee: staff.id },
    { assignee: null },
    { assignee: other.id },
    { status: 'open', assignee: staff.id },
  ]) {
    const res = await patch(mine.id, body);
    assert.equal(res.status, 403, JSON.stringify(body));
    assert.equal(res.body.error.code, 'FORBIDDEN');
  }
  assert.equal((await patch(theirs.id, { status: 'closed' })).status, 403);
  assert.equal((await patch(newId('cnv'), { status: 'closed' })).status, 404);

  const after = await call(app, 'GET', `/conversations/${mine.id}`, { token: staff.token });
  assert.equal(after.data.status, 'closed');
  assert.equal(after.data.assignee, staff.id);
});

test('a bulk update reports each item in order and applies only the good ones', async (t) => {
  const { app, admin, open } = await setup(t);
  const staff = await createStaff(app, 'staff');
  const a = await open();
  const b = await open();
  const missing = newId('cnv');
  const res = await call(app, 'PATCH', '/conversations/bulk', {
    token: admin.token,
    body: {
      items: [
        { id: a.id, status: 'closed' },
        { id: missing, status: 'closed' },
        { id: b.id, status: 'archived' },
        { id: b.id },
        { id: b.id, assignee: newId('stf'), status: 'closed' },
        { id: b.id, assignee: staff.id, status: 'pending' },
      ],
    },
  });
  assert.equal(res.status, 200);
  assert.equal(res.headers['x-ratelimit-limit'], '10');
  const outcome = res.data.map((r: { index: number; success: boolean; error?: { code: string } }) => [
    r.index,
    r.success,
    r.error?.code,
  ]);
  assert.deepEqual(outcome, [
    [0, true, undefined],
    [1, false, 'NOT_FOUND'],
    [2, false, 'VALIDATION_ERROR'],
    [3, false, 'VALIDATION_ERROR'],
    [4, false, 'VALIDATION_ERROR'],
    [5, true, undefined],
  ]);
  assert.equal(res.data[0].data.status, 'closed');
  assert.deepEqual(res.data[4].error.details, [
    { field: 'assignee', message: 'must be the id of an active staff member' },
  ]);

  const gotB = await call(app, 'GET', `/conversations/${b.id}`, { token: admin.token });
  assert.equal(gotB.data.status, 'pending', 'the failed item 4 left no half-applied status behind');
  assert.equal(gotB.data.assignee, staff.id);
});

test('a bulk update by a staff member follows the same per-item rules as a single update', async (t) => {
  const { app, open } = await setup(t);
  const staff = await createStaff(app, 'staff');
  const mine = await open({ assignee: staff.id });
  const theirs = await open();
  const res = await call(app, 'PATCH', '/conversations/bulk', {
    token: staff.token,
    body: {
      items: [
        { id: mine.id, status: 'closed' },
        { id: theirs.id, status: 'closed' },
        { id: mine.id, assignee: staff.id },
      ],
    },
  });
  assert.equal(res.status, 200);
  assert.deepEqual(
    res.data.map((r: { success: boolean; error?: { code: string } }) => r.error?.code ?? 'ok'),
    ['ok', 'FORBIDDEN', 'FORBIDDEN'],
  );
});

test('a bulk update takes 1 to 100 items and counts in the bulk rate-limit bucket', async (t) => {
  const { app, admin, open } = await setup(t);
  const c = await open();
  for (const items of [[], Array.from({ length: 101 }, () => ({ id: c.id, status: 'closed' }))]) {
    const res = await call(app, 'PATCH', '/conversations/bulk', { token: admin.token, body: { items } });
    assert.equal(res.status, 400, `${items.length} items`);
    assert.equal(res.body.error.code, 'VALIDATION_ERROR');
    assert.equal(res.headers['x-ratelimit-limit'], '10');
  }
  const extra = await call(app, 'PATCH', '/conversations/bulk', { token: admin.token, body: { items: [], all: true } });
  assert.equal(extra.status, 400);

  const standard = await call(app, 'GET', `/conversations/${c.id}`, { token: admin.token });
  assert.equal(standard.headers['x-ratelimit-limit'], '100');
  const hundred = await call(app, 'PATCH', '/conversations/bulk', {
    token: admin.token,
    body: { items: Array.from({ length: 100 }, (_, i) => ({ id: c.id, status: i % 2 ? 'open' : 'closed' })) },
  });
  assert.equal(hundred.status, 200);
  assert.equal(hundred.data.length, 100);
  assert.equal(Number(hundred.headers['x-ratelimit-remaining']), 10 - 4);
});

test('each listed conversation is exactly as GET /conversations/:id shows it: stay, labels, snooze', async (t) => {
  const { app, admin } = await setup(t);
  const day = (offset: number) => new Date(Date.now() + offset * 86_400_000).toISOString().slice(0, 10);
  const stay = async (guestId: string, body: Record<string, unknown>) => {
    const res = await call(app, 'POST', '/stays', {
      token: admin.token,
      body: { guestId, checkIn: day(-1), checkOut: day(2), ...body },
    });
    assert.equal(res.status, 201, JSON.stringify(res.body));
  };
  const guests = await Promise.all(['In House', 'Booked', 'Departed', 'No Stay'].map((n) => insertGuest(app, n)));
  // In house wins over an earlier booked stay; a booked one ending tomorrow or later is current.
  await stay(guests[0]!, { checkIn: day(-2), checkOut: day(1), room: '101' });
  await stay(guests[0]!, { checkIn: day(-1), checkOut: day(3), status: 'in_house', room: '102' });
  await stay(guests[1]!, { checkIn: day(5), checkOut: day(8) });
  await stay(guests[1]!, { checkIn: day(3), checkOut: day(4), room: '7' });
  await stay(guests[2]!, { checkIn: day(-5), checkOut: day(-1), status: 'checked_out' });
  const ids: string[] = [];
  for (const guestId of guests) ids.push((await openConversation(app, admin.token, { guestId, channel: 'web' })).id);
  await call(app, 'PATCH', `/conversations/${ids[0]}`, { token: admin.token, body: { labels: ['VIP', 'late'] } });
  const later = new Date(Date.now() + 3_600_000).toISOString();
  await call(app, 'PATCH', `/conversations/${ids[1]}`, {
    token: admin.token,
    body: { status: 'pending', snoozedUntil: later },
  });

  for (const url of ['/conversations', '/conversations?limit=2', '/conversations?status=open']) {
    const listed = await call(app, 'GET', url, { token: admin.token });
    assert.equal(listed.status, 200);
    for (const c of listed.data) {
      assert.deepEqual(c, (await call(app, 'GET', `/conversations/${c.id}`, { token: admin.token })).data, url);
    }
  }
  const all = (await call(app, 'GET', '/conversations', { token: admin.token })).data;
  const byId = new Map(all.map((c: { id: string }) => [c.id, c]));
  const shown = ids.map((id) => byId.get(id) as { stay: { room: string } | null; labels: string[] });
  assert.deepEqual(
    shown.map((c) => c.stay?.room ?? null),
    ['102', '7', null, null],
  );
  assert.deepEqual(shown[0]!.labels, ['vip', 'late']);
  const next = await call(app, 'GET', '/conversations?limit=2', { token: admin.token });
  const after = await call(
    app,
    'GET',
    `/conversations?limit=2&cursor=${encodeURIComponent(next.body.meta.nextCursor)}`,
    {
      token: admin.token,
    },
  );
  for (const c of after.data) {
    assert.deepEqual(c, (await call(app, 'GET', `/conversations/${c.id}`, { token: admin.token })).data);
  }
});
