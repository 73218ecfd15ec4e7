// Tests the maintained counts behind the lists' meta.total (migration 002): through HTTP, every
// filter combination's total equals a direct count(*) after creates, status changes,
// reassignments, bulk updates and the demo-data seed, on whichever store is under test.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { type TestContext, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { buildTestApp, call, createStaff, freshDatabaseUrl, type TestUser } from '../helpers.js';
import { nodeArgs, ROOT } from '../root.js';

const STATUSES = [undefined, 'open', 'closed', 'pending'] as const;
const CHANNELS = [undefined, 'whatsapp', 'sms', 'email', 'web'] as const;
const TASK_STATUSES = [undefined, 'open', 'in_progress', 'completed', 'cancelled'] as const;
const PRIORITIES = [undefined, 'low', 'normal', 'high', 'urgent'] as const;
const DEPARTMENTS = [undefined, 'housekeeping', 'maintenance', 'front-desk'] as const;

type Filter = Record<string, string | undefined>;

const query = (f: Filter) =>
  Object.entries(f)
    .filter((e): e is [string, string] => e[1] !== undefined)
    .map(([k, v]) => `&${k}=${encodeURIComponent(v)}`)
    .join('');

async function total(app: FastifyInstance, token: string, path: string, f: Filter): Promise<number> {
  const res = await call(app, 'GET', `${path}?limit=1${query(f)}`, { token });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body.meta.total;
}

/** count(*) over conversations for a filter; `owner` is a staff-role caller's own id. */
async function countConversations(app: FastifyInstance, f: Filter, owner?: string): Promise<number> {
  let q = app.ctx.store.db.selectFrom('conversations');
  if (f.status !== undefined) q = q.where('status', '=', f.status as 'open');
  if (f.channel !== undefined) q = q.where('channel', '=', f.channel as 'web');
  if (f.assignee === 'unassigned') q = q.where('assignee', 'is', null);
  else if (f.assignee !== undefined) q = q.where('assignee', '=', f.assignee);
  if (owner !== undefined) q = q.where('assignee', '=', owner);
  const row = await q.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
  return Number(row.n);
}

async function countTasks(app: FastifyInstance, f: Filter, owner?: string): Promise<number> {
  let q = app.ctx.store.db.selectFrom('tasks');
  if (f.status !== undefined) q = q.where('status', '=', f.status as 'open');
  if (f.priority !== undefined) q = q.where('priority', '=', f.priority as 'low');
  if (f.department !== undefined) q = q.where('department', '=', f.department);
  if (f.assignee === 'unassigned') q = q.where('assignee', 'is', null);
  else if (f.assignee !== undefined) q = q.where('assignee', '=', f.assignee);
  if (owner !== undefined) q = q.where('assignee', '=', owner);
  const row = await q.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Every status × channel, each with no assignee filter, 'unassigned' and each given staff id. */
function conversationFilters(assignees: string[]): Filter[] {
  const out: Filter[] = [];
  for (const status of STATUSES)
    for (const channel of CHANNELS)
      for (const assignee of [undefined, 'unassigned', ...assignees]) out.push({ status, channel, assignee });
  return out;
}

function taskFilters(assignees: string[]): Filter[] {
  const out: Filter[] = [];
  for (const status of TASK_STATUSES)
    for (const priority of PRIORITIES) for (const department of DEPARTMENTS) out.push({ status, priority, department });
  for (const assignee of ['unassigned', ...assignees])
    for (const status of TASK_STATUSES) out.push({ status, assignee });
  return out;
}

/** Checks every filter as the admin, and the staff member's own (onlyAssignee) view. */
async function assertConversationTotals(app: FastifyInstance, admin: TestUser, staff: TestUser[], label: string) {
  const ids = staff.map((s) => s.id);
  for (const f of conversationFilters(ids)) {
    assert.equal(
      await total(app, admin.token, '/conversations', f),
      await countConversations(app, f),
      `${label} ${query(f)}`,
    );
  }
  for (const s of staff) {
    for (const f of [{}, { status: 'open' }, { channel: 'sms' }, { assignee: 'unassigned' }, { assignee: ids[0] }]) {
      const got = await total(app, s.token, '/conversations', f);
      assert.equal(got, await countConversations(app, f, s.id), `${label} as ${s.id} ${query(f)}`);
    }
  }
}

async function assertTaskTotals(app: FastifyInstance, admin: TestUser, staff: TestUser[], label: string) {
  for (const f of taskFilters(staff.map((s) => s.id))) {
    assert.equal(await total(app, admin.token, '/tasks', f), await countTasks(app, f), `${label} ${query(f)}`);
  }
  for (const s of staff) {
    for (const f of [{}, { status: 'open' }, { priority: 'high' }]) {
      assert.equal(await total(app, s.token, '/tasks', f), await countTasks(app, f, s.id), `${label} as ${s.id}`);
    }
  }
}

async function assertGuestTotal(app: FastifyInstance, admin: TestUser) {
  const row = await app.ctx.store.db
    .selectFrom('guests')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  assert.equal(await total(app, admin.token, '/guests', {}), Number(row.n));
}

/** staff_guests (migration 011) holds exactly what the assignments say, references included. */
async function assertStaffGuestsTable(app: FastifyInstance, label: string) {
  const db = app.ctx.store.db;
  const kept = await db.selectFrom('staff_guests').select(['staff_id', 'guest_id', 'refs']).execute();
  const conversations = await db
    .selectFrom('conversations')
    .select(['assignee', 'guest_id'])
    .where('assignee', 'is not', null)
    .execute();
  const tasks = await db
    .selectFrom('tasks')
    .select(['assignee', 'guest_id'])
    .where('assignee', 'is not', null)
    .where('guest_id', 'is not', null)
    .execute();
  const want = new Map<string, number>();
  for (const r of [...conversations, ...tasks]) {
    const key = `${r.assignee} ${r.guest_id}`;
    want.set(key, (want.get(key) ?? 0) + 1);
  }
  assert.deepEqual(new Map(kept.map((r) => [`${r.staff_id} ${r.guest_id}`, Number(r.refs)])), want, label);
  // Each member's count is their number of rows (a member whose rows all went keeps a 0).
  const perStaff = new Map<string, number>();
  for (const r of kept) perStaff.set(r.staff_id, (perStaff.get(r.staff_id) ?? 0) + 1);
  // Summed over a member's rows: on PostgreSQL a count is spread over slots (migration 013).
  const counts = new Map<string, number>();
  for (const r of await db.selectFrom('staff_guest_counts').select(['staff_id', 'n']).execute()) {
    counts.set(r.staff_id, (counts.get(r.staff_id) ?? 0) + Number(r.n));
  }
  assert.deepEqual(new Map([...counts].filter(([, n]) => n > 0)), perStaff, `${label}: staff_guest_counts`);
}

/** Each staff member's GET /guests (first page, a deep page, its total) is their assignments' guests. */
async function assertStaffGuestLists(app: FastifyInstance, staff: TestUser[], label: string) {
  await assertStaffGuestsTable(app, label);
  const db = app.ctx.store.db;
  for (const s of staff) {
    const want = await db
      .selectFrom('guests')
      .select('id')
      .where((eb) =>
        eb.or([
          eb('id', 'in', eb.selectFrom('conversations').select('guest_id').where('assignee', '=', s.id)),
          eb('id', 'in', eb.selectFrom('tasks').select('guest_id').where('assignee', '=', s.id)),
        ]),
      )
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .execute();
    const ids = want.map((r) => r.id);
    const first = await call(app, 'GET', '/guests?limit=100', { token: s.token });
    assert.equal(first.status, 200, JSON.stringify(first.body));
    assert.deepEqual(
      first.data.map((g: { id: string }) => g.id),
      ids,
      `${label}: guests of ${s.id}`,
    );
    assert.equal(first.body.meta.total, ids.length, `${label}: total of ${s.id}`);
    const second = await call(app, 'GET', '/guests?limit=1&page=2', { token: s.token });
    assert.equal(second.status, 200);
    assert.deepEqual(
      second.data.map((g: { id: string }) => g.id),
      ids.slice(1, 2),
      `${label}: page 2 of ${s.id}`,
    );
    assert.equal(second.body.meta.total, ids.length);
    // Every guest here is named "Guest <n>": a search for "guest" matches all of a member's.
    const search = await call(app, 'GET', '/guests?limit=100&search=guest', { token: s.token });
    assert.equal(search.status, 200);
    assert.deepEqual(
      search.data.map((g: { id: string }) => g.id),
      ids,
      `${label}: search of ${s.id}`,
    );
    assert.equal(search.body.meta.total, ids.length, `${label}: search total of ${s.id}`);
    // A tag's guests of the member: its total from staff_tag_counts (migration 014).
    for (const tag of TAGS) {
      const tagged = await db.selectFrom('guest_tags').select('guest_id').where('tag', '=', tag).execute();
      const holding = new Set(tagged.map((r) => r.guest_id));
      const res = await call(app, 'GET', `/guests?limit=100&tag=${tag}`, { token: s.token });
      assert.equal(res.status, 200);
      const want = ids.filter((id) => holding.has(id));
      assert.deepEqual(
        res.data.map((g: { id: string }) => g.id),
        want,
        `${label}: ${tag} of ${s.id}`,
      );
      assert.equal(res.body.meta.total, want.length, `${label}: ${tag} total of ${s.id}`);
    }
  }
}

const TAGS = ['vip', 'late'] as const;

// Each check is many list requests: far over the default per-token budget.
const LIMITS = { RATE_LIMIT_STANDARD: '1000000', RATE_LIMIT_BULK: '1000000' };

async function setup(t: TestContext) {
  const app = await buildTestApp(t, LIMITS);
  const admin = await createStaff(app, 'admin');
  const staff = [await createStaff(app, 'staff'), await createStaff(app, 'staff')];
  const guests: string[] = [];
  for (let i = 0; i < 3; i++) {
    const res = await call(app, 'POST', '/guests', {
      token: admin.token,
      body: {
        name: `Guest ${i}`,
        phone: `+1555010010${i}`,
        email: `guest${i}@example.test`,
        tags: i === 0 ? ['vip'] : i === 1 ? ['vip', 'late'] : [],
      },
    });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    guests.push(res.data.id);
  }
  return { app, admin, staff, guests };
}

test('conversation totals stay exact through creates, status changes, reassignment and bulk updates', async (t) => {
  const { app, admin, staff, guests } = await setup(t);
  const [a, b] = staff as [TestUser, TestUser];
  await assertConversationTotals(app, admin, staff, 'empty');

  const created: string[] = [];
  // created[0] gets a text below: not WhatsApp, whose 24-hour window needs the guest to have written.
  const channels = ['sms', 'whatsapp', 'email', 'web'];
  const assignees = [null, a.id, b.id];
  for (let i = 0; i < 12; i++) {
    const body = { guestId: guests[i % 3], channel: channels[i % 4], assignee: assignees[i % 3] };
    const res = await call(app, 'POST', '/conversations', { token: admin.token, body });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    created.push(res.data.id);
  }
  // A staff member's own create defaults the assignee to themselves.
  const own = await call(app, 'POST', '/conversations', {
    token: a.token,
    body: { guestId: guests[0], channel: 'sms' },
  });
  assert.equal(own.status, 201);
  created.push(own.data.id);
  await assertConversationTotals(app, admin, staff, 'after creates');
  await assertStaffGuestLists(app, staff, 'after creates');

  const patch = (id: string, body: unknown, token = admin.token) =>
    call(app, 'PATCH', `/conversations/${id}`, { token, body });
  assert.equal((await patch(created[0]!, { status: 'closed' })).status, 200);
  assert.equal((await patch(created[1]!, { status: 'pending', assignee: b.id })).status, 200);
  assert.equal((await patch(created[2]!, { assignee: null })).status, 200);
  assert.equal((await patch(created[4]!, { assignee: a.id })).status, 200);
  // Same values again: the row is written but no key changes.
  assert.equal((await patch(created[4]!, { assignee: a.id, status: 'open' })).status, 200);
  assert.equal((await patch(own.data.id, { status: 'closed' }, a.token)).status, 200);
  await assertConversationTotals(app, admin, staff, 'after updates');
  await assertStaffGuestLists(app, staff, 'after updates');

  // A guest's tags change while members hold it: their tag totals follow.
  for (const [g, tags] of [
    [guests[0], ['late']],
    [guests[2], ['vip', 'late']],
    [guests[1], []],
  ] as const) {
    const res = await call(app, 'PATCH', `/guests/${g}`, { token: admin.token, body: { tags } });
    assert.equal(res.status, 200, JSON.stringify(res.body));
  }
  await assertStaffGuestLists(app, staff, 'after tag changes');

  // A message on a closed conversation reopens it: the touch changes the status key.
  const msg = await call(app, 'POST', `/conversations/${created[0]}/messages`, {
    token: admin.token,
    body: { content: 'We are on it' },
  });
  assert.ok(msg.status === 201 || msg.status === 200, JSON.stringify(msg.body));
  await assertConversationTotals(app, admin, staff, 'after a message');

  const bulk = await call(app, 'PATCH', '/conversations/bulk', {
    token: admin.token,
    body: {
      items: [
        { id: created[5], status: 'closed' },
        { id: created[6], assignee: b.id, status: 'pending' },
        { id: created[7], status: 'archived' },
        { id: created[8], assignee: null },
        { id: created[9], status: 'closed', assignee: a.id },
      ],
    },
  });
  assert.equal(bulk.status, 200);
  await assertConversationTotals(app, admin, staff, 'after a bulk update');
  await assertStaffGuestLists(app, staff, 'after a bulk update');
});

test('task totals stay exact through creates, bulk creates and every kind of update', async (t) => {
  const { app, admin, staff, guests } = await setup(t);
  const [a, b] = staff as [TestUser, TestUser];
  const manager = await createStaff(app, 'manager');
  const made: string[] = [];
  const departments = ['housekeeping', 'maintenance', 'front-desk'];
  const priorities = ['low', 'normal', 'high', 'urgent'];
  const assignees = [null, a.id, b.id];
  for (let i = 0; i < 10; i++) {
    const body = {
      title: `Task ${i}`,
      department: departments[i % 3],
      priority: priorities[i % 4],
      assignee: assignees[i % 3],
      guestId: guests[i % 3],
    };
    const res = await call(app, 'POST', '/tasks', { token: manager.token, body });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    made.push(res.data.id);
  }
  const bulk = await call(app, 'POST', '/tasks/bulk', {
    token: manager.token,
    body: {
      items: [
        { title: 'Bulk 1', department: 'housekeeping', assignee: a.id },
        { title: 'Bulk 2', department: 'nowhere' },
        { title: 'Bulk 3', department: 'maintenance', priority: 'urgent' },
      ],
    },
  });
  assert.equal(bulk.status, 200);
  await assertTaskTotals(app, admin, staff, 'after creates');
  await assertStaffGuestLists(app, staff, 'after task creates');

  const patch = (id: string, body: unknown, token = manager.token) =>
    call(app, 'PATCH', `/tasks/${id}`, { token, body });
  assert.equal((await patch(made[0]!, { status: 'in_progress' })).status, 200);
  assert.equal((await patch(made[1]!, { status: 'completed', assignee: b.id })).status, 200);
  assert.equal((await patch(made[2]!, { priority: 'urgent', department: 'front-desk' })).status, 200);
  assert.equal((await patch(made[3]!, { assignee: null })).status, 200);
  assert.equal((await patch(made[4]!, { notes: 'No key changes' })).status, 200);
  assert.equal((await patch(made[4]!, { status: 'cancelled' }, a.token)).status, 200);
  await assertTaskTotals(app, admin, staff, 'after updates');
  await assertStaffGuestLists(app, staff, 'after task updates');
});

test('the unfiltered guest total comes from guest_counts and stays exact through single and bulk creates', async (t) => {
  const { app, admin } = await setup(t);
  await assertGuestTotal(app, admin);
  const bulk = await call(app, 'POST', '/guests/bulk', {
    token: admin.token,
    body: { items: [{ name: 'One' }, { name: 'Two', tags: ['vip'] }, { name: '' }] },
  });
  assert.equal(bulk.status, 200);
  await assertGuestTotal(app, admin);
  // Two of setup's guests hold vip, and the bulk's "Two".
  assert.equal(await total(app, admin.token, '/guests', { tag: 'vip' }), 3);
  assert.equal(await total(app, admin.token, '/guests', { search: 'two' }), 1);
});

function seed(databaseUrl: string): Promise<void> {
  const args = ['--guests', '40', '--conversations', '120', '--messages', '300', '--tasks', '80', '--knowledge', '5'];
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [...nodeArgs('src/cli/index.ts'), 'seed', ...args],
      { cwd: ROOT, env: { ...process.env, DATABASE_URL: databaseUrl }, timeout: 120_000 },
      (err, _stdout, stderr) => (err === null ? resolve() : reject(new Error(`seed failed: ${stderr}`))),
    );
  });
}

test('totals match a direct count after the demo-data seed, which inserts through the same triggers', async (t) => {
  const url = await freshDatabaseUrl(t);
  await seed(url);
  const app = await buildTestApp(t, { ...LIMITS, DATABASE_URL: url });
  const admin = await createStaff(app, 'admin');
  const seededStaff = await app.ctx.store.db
    .selectFrom('conversations')
    .select('assignee')
    .distinct()
    .where('assignee', 'is not', null)
    .orderBy('assignee')
    .limit(2)
    .execute();
  assert.ok(seededStaff.length > 0, 'the seed assigns conversations');
  const ids = seededStaff.map((r) => r.assignee!);
  for (const f of conversationFilters(ids)) {
    assert.equal(await total(app, admin.token, '/conversations', f), await countConversations(app, f), query(f));
  }
  for (const f of taskFilters(ids)) {
    assert.equal(await total(app, admin.token, '/tasks', f), await countTasks(app, f), query(f));
  }
  await assertGuestTotal(app, admin);
  await assertStaffGuestsTable(app, 'after the seed');
});

test('totals stay exact when many creates and moves of the same keys run at once', async (t) => {
  const { app, admin, staff, guests } = await setup(t);
  const [a, b] = staff as [TestUser, TestUser];
  // Concurrent requests: on PostgreSQL each runs in its own transaction on its own connection,
  // and their count changes land on the same keys (spread over slots, migration 013).
  const made = await Promise.all(
    Array.from({ length: 24 }, (_, i) =>
      call(app, 'POST', '/conversations', {
        token: admin.token,
        body: { guestId: guests[i % 3], channel: 'sms', assignee: i % 2 ? a.id : b.id },
      }),
    ),
  );
  for (const r of made) assert.equal(r.status, 201, JSON.stringify(r.body));
  const moved = await Promise.all(
    made.map((r, i) =>
      call(app, 'PATCH', `/conversations/${r.data.id}`, {
        token: admin.token,
        // Half move a → b, half b → a, at the same time: opposite directions over the same keys.
        body: { assignee: i % 2 ? b.id : a.id, status: i % 3 ? 'pending' : 'closed' },
      }),
    ),
  );
  for (const r of moved) assert.equal(r.status, 200, JSON.stringify(r.body));
  // Tag changes of the same guests while new assignments of them commit (migration 014's lock).
  const mixed = await Promise.all([
    ...guests.map((g, i) =>
      call(app, 'PATCH', `/guests/${g}`, { token: admin.token, body: { tags: i % 2 ? ['late'] : ['vip', 'late'] } }),
    ),
    ...Array.from({ length: 6 }, (_, i) =>
      call(app, 'POST', '/conversations', {
        token: admin.token,
        body: { guestId: guests[i % 3], channel: 'web', assignee: i % 2 ? a.id : b.id },
      }),
    ),
  ]);
  for (const r of mixed) assert.ok(r.status === 200 || r.status === 201, JSON.stringify(r.body));
  const created = await Promise.all(
    Array.from({ length: 24 }, (_, i) =>
      call(app, 'POST', '/guests', { token: admin.token, body: { name: `Concurrent ${i}` } }),
    ),
  );
  for (const r of created) assert.equal(r.status, 201, JSON.stringify(r.body));
  await assertConversationTotals(app, admin, staff, 'after concurrent creates and moves');
  await assertStaffGuestLists(app, staff, 'after concurrent creates and moves');
  await assertGuestTotal(app, admin);
});
