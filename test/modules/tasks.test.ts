// Tests /tasks through HTTP: the record, validation, list filters and paging, completion,
// roles, and bulk create.
import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { insertConversation, insertGuest } from '../fixtures.js';
import { assertPagesAgree, buildTestApp, call, createStaff } from '../helpers.js';

async function setup(t: TestContext) {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const manager = await createStaff(app, 'manager');
  const staff = await createStaff(app, 'staff');
  const other = await createStaff(app, 'staff');
  const create = async (body: Record<string, unknown>, token = manager.token) => {
    const res = await call(app, 'POST', '/tasks', {
      token,
      body: { title: 'Fix the tap', department: 'maintenance', ...body },
    });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return res.data;
  };
  return { app, admin, manager, staff, other, create };
}

/** The distinct fields a VALIDATION_ERROR names, sorted. */
const fields = (res: { body: { error?: { details?: unknown } } }) =>
  [...new Set(((res.body.error?.details ?? []) as { field: string }[]).map((d) => d.field))].sort();

test('a manager creates a task with every field and gets the whole record back', async (t) => {
  const { app, manager, staff } = await setup(t);
  const guestId = await insertGuest(app);
  const conversationId = await insertConversation(app, guestId);
  const res = await call(app, 'POST', '/tasks', {
    token: manager.token,
    body: {
      title: 'Extra towels',
      department: 'housekeeping',
      priority: 'urgent',
      description: 'Two bath towels to room 214',
      guestId,
      conversationId,
      assignee: staff.id,
      dueAt: '2030-05-01T10:30:00+02:00',
    },
  });
  assert.equal(res.status, 201);
  const task = res.data;
  assert.match(task.id, /^tsk_[0-9a-z]{26}$/);
  assert.deepEqual(
    { ...task, id: undefined, createdAt: undefined, updatedAt: undefined },
    {
      id: undefined,
      title: 'Extra towels',
      description: 'Two bath towels to room 214',
      department: 'housekeeping',
      priority: 'urgent',
      status: 'open',
      guestId,
      conversationId,
      stayId: null,
      assignee: staff.id,
      notes: null,
      dueAt: '2030-05-01T08:30:00.000Z',
      completedAt: null,
      deadline: '2030-05-01T08:30:00.000Z',
      createdAt: undefined,
      updatedAt: undefined,
    },
  );
  assert.match(task.createdAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  assert.equal(task.updatedAt, task.createdAt);
  const got = await call(app, 'GET', `/tasks/${task.id}`, { token: manager.token });
  assert.equal(got.status, 200);
  assert.deepEqual(got.data, task);
});

test('a task created with only title and department is open, normal priority, with nulls elsewhere', async (t) => {
  const { create } = await setup(t);
  const task = await create({});
  assert.equal(task.priority, 'normal');
  assert.equal(task.status, 'open');
  for (const f of ['description', 'guestId', 'conversationId', 'assignee', 'notes', 'dueAt', 'completedAt']) {
    assert.equal(task[f], null, f);
  }
});

test('create names every missing or malformed field', async (t) => {
  const { app, manager } = await setup(t);
  const post = (body: unknown) => call(app, 'POST', '/tasks', { token: manager.token, body });
  const missing = await post({});
  assert.equal(missing.status, 400);
  assert.equal(missing.body.error.code, 'VALIDATION_ERROR');
  assert.deepEqual(fields(missing), ['department', 'title']);

  const cases: [Record<string, unknown>, string][] = [
    [{ title: 'x'.repeat(201) }, 'title'],
    [{ title: '' }, 'title'],
    [{ priority: 'asap' }, 'priority'],
    [{ description: 'x'.repeat(5001) }, 'description'],
    [{ dueAt: 'tomorrow' }, 'dueAt'],
    [{ dueAt: '2030-05-01T10:30:00' }, 'dueAt'],
    [{ dueAt: '0001-01-01T00:00:00Z' }, 'dueAt'],
    [{ status: 'completed' }, 'status'],
    [{ colour: 'red' }, 'colour'],
  ];
  for (const [extra, field] of cases) {
    const res = await post({ title: 'Fix the tap', department: 'maintenance', ...extra });
    assert.equal(res.status, 400, field);
    assert.deepEqual(fields(res), [field], field);
  }
  const ok = await post({ title: 'x'.repeat(200), department: 'maintenance', description: 'x'.repeat(5000) });
  assert.equal(ok.status, 201);
});

test('a department must be in the departments setting, and one added by an admin becomes valid', async (t) => {
  const { app, admin, manager } = await setup(t);
  const spa = () =>
    call(app, 'POST', '/tasks', { token: manager.token, body: { title: 'Book massage', department: 'spa' } });
  const before = await spa();
  assert.equal(before.status, 400);
  assert.deepEqual(fields(before), ['department']);
  const put = await call(app, 'PUT', '/settings/departments', {
    token: admin.token,
    body: { value: ['housekeeping', 'maintenance', 'spa'] },
  });
  assert.equal(put.status, 200);
  const after = await spa();
  assert.equal(after.status, 201);
  assert.equal(after.data.department, 'spa');
});

test('unknown guest, conversation and assignee are each named in one 400', async (t) => {
  const { app, manager } = await setup(t);
  const res = await call(app, 'POST', '/tasks', {
    token: manager.token,
    body: {
      title: 'Call back',
      department: 'front-desk',
      guestId: 'gst_01jd8x3k5q7w9e2r4t6y8u0i1o',
      conversationId: 'cnv_01jd8x3k5q7w9e2r4t6y8u0i1o',
      assignee: 'stf_01jd8x3k5q7w9e2r4t6y8u0i1o',
    },
  });
  assert.equal(res.status, 400);
  assert.equal(res.body.error.code, 'VALIDATION_ERROR');
  assert.deepEqual(fields(res), ['assignee', 'conversationId', 'guestId']);
});

test('a deactivated staff member cannot be assigned a task', async (t) => {
  const { app, admin, manager, staff } = await setup(t);
  const off = await call(app, 'PATCH', `/staff/${staff.id}`, { token: admin.token, body: { active: false } });
  assert.equal(off.status, 200);
  const res = await call(app, 'POST', '/tasks', {
    token: manager.token,
    body: { title: 'Fix the tap', department: 'maintenance', assignee: staff.id },
  });
  assert.equal(res.status, 400);
  assert.deepEqual(fields(res), ['assignee']);
});

test('a conversation of another guest than guestId is refused', async (t) => {
  const { app, manager } = await setup(t);
  const guestA = await insertGuest(app);
  const guestB = await insertGuest(app);
  const conversationId = await insertConversation(app, guestB);
  const res = await call(app, 'POST', '/tasks', {
    token: manager.token,
    body: { title: 'Fix the tap', department: 'maintenance', guestId: guestA, conversationId },
  });
  assert.equal(res.status, 400);
  assert.deepEqual(fields(res), ['conversationId']);
});

test('the list filters by status, priority, department and assignee, alone and combined', async (t) => {
  const { app, manager, staff, create } = await setup(t);
  const a = await create({ priority: 'urgent', department: 'housekeeping', assignee: staff.id });
  const b = await create({ priority: 'low', department: 'housekeeping' });
  const c = await create({ priority: 'urgent', department: 'maintenance' });
  const d = await create({ priority: 'urgent', department: 'housekeeping', assignee: staff.id });
  await call(app, 'PATCH', `/tasks/${d.id}`, { token: manager.token, body: { status: 'in_progress' } });
  const ids = async (query: string) => {
    const res = await call(app, 'GET', `/tasks?${query}`, { token: manager.token });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return res.data.map((x: { id: string }) => x.id);
  };
  assert.deepEqual(await ids(''), [d.id, c.id, b.id, a.id]);
  assert.deepEqual(await ids('status=open'), [c.id, b.id, a.id]);
  assert.deepEqual(await ids('status=in_progress'), [d.id]);
  assert.deepEqual(await ids('status=cancelled'), []);
  assert.deepEqual(await ids('priority=urgent'), [d.id, c.id, a.id]);
  assert.deepEqual(await ids('department=housekeeping'), [d.id, b.id, a.id]);
  assert.deepEqual(await ids(`assignee=${staff.id}`), [d.id, a.id]);
  assert.deepEqual(await ids('assignee=unassigned'), [c.id, b.id]);
  assert.deepEqual(await ids('priority=urgent&department=housekeeping&status=open'), [a.id]);
  assert.deepEqual(await ids('assignee=unassigned&priority=urgent'), [c.id]);
});

test('list query values outside their sets are a 400 naming the parameter', async (t) => {
  const { app, manager } = await setup(t);
  for (const [query, field] of [
    ['status=done', 'status'],
    ['priority=asap', 'priority'],
    ['limit=101', 'limit'],
    ['page=0', 'page'],
    ['sort=title', 'sort'],
  ]) {
    const res = await call(app, 'GET', `/tasks?${query}`, { token: manager.token });
    assert.equal(res.status, 400, query);
    assert.deepEqual(fields(res), [field], query);
  }
});

test('the list is newest first and paginates with meta; a page past the end is empty', async (t) => {
  const { app, manager, create } = await setup(t);
  const made: string[] = [];
  for (let i = 0; i < 5; i++) made.push((await create({ title: `Task ${i}` })).id);
  const newestFirst = [...made].reverse();
  const page1 = await call(app, 'GET', '/tasks?limit=2', { token: manager.token });
  assert.deepEqual(
    { ...page1.body.meta, nextCursor: typeof page1.body.meta.nextCursor },
    { page: 1, limit: 2, total: 5, pages: 3, nextCursor: 'string' },
  );
  assert.deepEqual(
    page1.data.map((x: { id: string }) => x.id),
    newestFirst.slice(0, 2),
  );
  const page3 = await call(app, 'GET', '/tasks?limit=2&page=3', { token: manager.token });
  assert.deepEqual(
    page3.data.map((x: { id: string }) => x.id),
    newestFirst.slice(4),
  );
  const past = await call(app, 'GET', '/tasks?limit=2&page=4', { token: manager.token });
  assert.equal(past.status, 200);
  assert.deepEqual(past.data, []);
  assert.deepEqual(past.body.meta, { page: 4, limit: 2, total: 5, pages: 3, nextCursor: null });
  const defaults = await call(app, 'GET', '/tasks', { token: manager.token });
  assert.deepEqual(defaults.body.meta, { page: 1, limit: 20, total: 5, pages: 1, nextCursor: null });
  await assertPagesAgree(app, manager.token, '/tasks', newestFirst);
  await assertPagesAgree(app, manager.token, '/tasks?status=open', newestFirst);
});

test('completedAt is set on completion, kept while completed, and cleared on reopening', async (t) => {
  const { app, manager, create } = await setup(t);
  const task = await create({});
  const patch = (body: unknown) => call(app, 'PATCH', `/tasks/${task.id}`, { token: manager.token, body });
  const done = await patch({ status: 'completed' });
  assert.equal(done.status, 200);
  assert.equal(done.data.status, 'completed');
  assert.match(done.data.completedAt, /Z$/);
  assert.ok(done.data.updatedAt >= task.updatedAt);
  await sleep(5);
  const again = await patch({ status: 'completed', notes: 'checked twice' });
  assert.equal(again.data.completedAt, done.data.completedAt);
  const noted = await patch({ notes: 'still done' });
  assert.equal(noted.data.completedAt, done.data.completedAt);
  const reopened = await patch({ status: 'open' });
  assert.equal(reopened.data.status, 'open');
  assert.equal(reopened.data.completedAt, null);
  const cancelled = await patch({ status: 'cancelled' });
  assert.equal(cancelled.data.completedAt, null);
});

test('a manager can update every field and clear the nullable ones', async (t) => {
  const { app, manager, staff, other, create } = await setup(t);
  const task = await create({ assignee: staff.id, description: 'old', dueAt: '2030-01-01T00:00:00Z' });
  const res = await call(app, 'PATCH', `/tasks/${task.id}`, {
    token: manager.token,
    body: {
      title: 'New title',
      department: 'concierge',
      priority: 'high',
      assignee: other.id,
      status: 'in_progress',
      notes: 'on it',
      dueAt: '2031-02-03T04:05:06.789Z',
    },
  });
  assert.equal(res.status, 200);
  assert.equal(res.data.title, 'New title');
  assert.equal(res.data.department, 'concierge');
  assert.equal(res.data.priority, 'high');
  assert.equal(res.data.assignee, other.id);
  assert.equal(res.data.status, 'in_progress');
  assert.equal(res.data.notes, 'on it');
  assert.equal(res.data.dueAt, '2031-02-03T04:05:06.789Z');
  const cleared = await call(app, 'PATCH', `/tasks/${task.id}`, {
    token: manager.token,
    body: { assignee: null, description: null, dueAt: null, notes: null },
  });
  assert.equal(cleared.status, 200);
  for (const f of ['assignee', 'description', 'dueAt', 'notes']) assert.equal(cleared.data[f], null, f);
  // Without a dueAt the deadline is the creation plus the sla setting's 60 minutes for high.
  assert.equal(cleared.data.deadline, new Date(Date.parse(task.createdAt) + 60 * 60_000).toISOString());
  const got = await call(app, 'GET', `/tasks/${task.id}`, { token: manager.token });
  assert.deepEqual(got.data, cleared.data);
});

test('an update is checked like a create, needs a field, and a missing task is 404', async (t) => {
  const { app, manager, create } = await setup(t);
  const task = await create({});
  const patch = (body: unknown, id = task.id) => call(app, 'PATCH', `/tasks/${id}`, { token: manager.token, body });
  assert.equal((await patch({})).status, 400);
  for (const [body, field] of [
    [{ department: 'spa' }, 'department'],
    [{ status: 'done' }, 'status'],
    [{ assignee: 'stf_01jd8x3k5q7w9e2r4t6y8u0i1o' }, 'assignee'],
    [{ guestId: 'gst_01jd8x3k5q7w9e2r4t6y8u0i1o' }, 'guestId'],
    [{ notes: 'x'.repeat(5001) }, 'notes'],
    [{ title: null }, 'title'],
  ] as const) {
    const res = await patch(body);
    assert.equal(res.status, 400, field);
    assert.deepEqual(fields(res), [field], field);
  }
  const missing = await patch({ status: 'completed' }, 'tsk_01jd8x3k5q7w9e2r4t6y8u0i1o');
  assert.equal(missing.status, 404);
  assert.equal(missing.body.error.code, 'NOT_FOUND');
});

test('a staff member cannot create tasks', async (t) => {
  const { app, staff } = await setup(t);
  const res = await call(app, 'POST', '/tasks', {
    token: staff.token,
    body: { title: 'x', department: 'maintenance' },
  });
  assert.equal(res.status, 403);
  assert.equal(res.body.error.code, 'FORBIDDEN');
});

test('a staff member lists only tasks assigned to them, whatever the filters', async (t) => {
  const { app, staff, other, create } = await setup(t);
  const mine = await create({ assignee: staff.id, priority: 'high' });
  await create({ assignee: other.id, priority: 'high' });
  await create({ priority: 'high' });
  const list = async (query: string) => {
    const res = await call(app, 'GET', `/tasks${query}`, { token: staff.token });
    assert.equal(res.status, 200);
    return res;
  };
  const all = await list('');
  assert.deepEqual(
    all.data.map((x: { id: string }) => x.id),
    [mine.id],
  );
  assert.equal(all.body.meta.total, 1);
  assert.equal((await list('?priority=high')).data.length, 1);
  assert.equal((await list(`?assignee=${other.id}`)).data.length, 0);
  assert.equal((await list('?assignee=unassigned')).data.length, 0);
});

test('a staff member cannot read a task assigned to someone else; a missing one is 404', async (t) => {
  const { app, staff, other, create } = await setup(t);
  const mine = await create({ assignee: staff.id });
  const theirs = await create({ assignee: other.id });
  const unassigned = await create({});
  assert.equal((await call(app, 'GET', `/tasks/${mine.id}`, { token: staff.token })).status, 200);
  const denied = await call(app, 'GET', `/tasks/${theirs.id}`, { token: staff.token });
  assert.equal(denied.status, 403);
  assert.equal(denied.body.error.code, 'FORBIDDEN');
  assert.equal((await call(app, 'GET', `/tasks/${unassigned.id}`, { token: staff.token })).status, 403);
  const missing = await call(app, 'GET', '/tasks/tsk_01jd8x3k5q7w9e2r4t6y8u0i1o', { token: staff.token });
  assert.equal(missing.status, 404);
  assert.equal(missing.body.error.code, 'NOT_FOUND');
});

test('a staff member may change only status and notes, and only on their own task', async (t) => {
  const { app, staff, other, create } = await setup(t);
  const mine = await create({ assignee: staff.id });
  const theirs = await create({ assignee: other.id });
  const patch = (id: string, body: unknown) => call(app, 'PATCH', `/tasks/${id}`, { token: staff.token, body });
  const done = await patch(mine.id, { status: 'completed', notes: 'Replaced the washer' });
  assert.equal(done.status, 200);
  assert.equal(done.data.status, 'completed');
  assert.equal(done.data.notes, 'Replaced the washer');
  assert.ok(done.data.completedAt);
  for (const body of [
    { priority: 'urgent' },
    { assignee: other.id },
    { assignee: null },
    { title: 'Mine now' },
    { status: 'open', dueAt: null },
  ]) {
    const res = await patch(mine.id, body);
    assert.equal(res.status, 403, JSON.stringify(body));
    assert.equal(res.body.error.code, 'FORBIDDEN');
  }
  const denied = await patch(theirs.id, { status: 'completed' });
  assert.equal(denied.status, 403);
  assert.equal((await patch('tsk_01jd8x3k5q7w9e2r4t6y8u0i1o', { status: 'open' })).status, 404);
  const unchanged = await call(app, 'GET', `/tasks/${mine.id}`, { token: staff.token });
  assert.equal(unchanged.data.priority, 'normal');
  assert.equal(unchanged.data.assignee, staff.id);
  assert.equal(unchanged.data.status, 'completed');
});

test('bulk create reports each item in order and creates only the valid ones', async (t) => {
  const { app, manager } = await setup(t);
  const res = await call(app, 'POST', '/tasks/bulk', {
    token: manager.token,
    body: {
      items: [
        { title: 'First', department: 'housekeeping' },
        { department: 'housekeeping' },
        { title: 'Third', department: 'maintenance', guestId: 'gst_01jd8x3k5q7w9e2r4t6y8u0i1o' },
        { title: 'Fourth', department: 'nowhere', colour: 'red' },
        { title: 'Fifth', department: 'concierge', priority: 'high' },
      ],
    },
  });
  assert.equal(res.status, 200);
  assert.equal(res.headers['x-ratelimit-limit'], '10');
  const results = res.data as {
    index: number;
    success: boolean;
    data?: { id: string };
    error?: { code: string; details?: unknown };
  }[];
  assert.deepEqual(
    results.map((r) => [r.index, r.success]),
    [
      [0, true],
      [1, false],
      [2, false],
      [3, false],
      [4, true],
    ],
  );
  assert.equal(results[0]!.data!.id.startsWith('tsk_'), true);
  assert.equal(results[1]!.error!.code, 'VALIDATION_ERROR');
  assert.deepEqual(fields({ body: results[1]! }), ['title']);
  assert.deepEqual(fields({ body: results[2]! }), ['guestId']);
  assert.deepEqual(fields({ body: results[3]! }), ['colour']);
  const list = await call(app, 'GET', '/tasks', { token: manager.token });
  assert.deepEqual(
    list.data.map((x: { title: string; priority: string }) => [x.title, x.priority]),
    [
      ['Fifth', 'high'],
      ['First', 'normal'],
    ],
  );
});

test('bulk create takes 1 to 100 items and is for admins and managers only', async (t) => {
  const { app, admin, staff } = await setup(t);
  const bulk = (items: unknown[], token = admin.token) => call(app, 'POST', '/tasks/bulk', { token, body: { items } });
  const none = await bulk([]);
  assert.equal(none.status, 400);
  assert.deepEqual(fields(none), ['items']);
  const item = { title: 'Fix the tap', department: 'maintenance' };
  const tooMany = await bulk(Array.from({ length: 101 }, () => item));
  assert.equal(tooMany.status, 400);
  assert.deepEqual(fields(tooMany), ['items']);
  const hundred = await bulk(Array.from({ length: 100 }, () => item));
  assert.equal(hundred.status, 200);
  assert.equal(hundred.data.filter((r: { success: boolean }) => r.success).length, 100);
  assert.equal((await bulk([item], staff.token)).status, 403);
});
