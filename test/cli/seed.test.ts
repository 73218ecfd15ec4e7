// Tests the `seed` command end to end: run as a child process on a fresh store, then checked through
// the API (the printed logins work) and directly in the store (counts and consistency of the rows).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { fromJson, toIso } from '../../src/db/store.js';
import { DEFAULT_DEPARTMENTS } from '../../src/modules/settings/registry.js';
import { dayIn } from '../../src/modules/stays/dates.js';
import { login } from '../fixtures.js';
import { buildTestApp, call, freshDatabaseUrl, TEST_STORE } from '../helpers.js';
import { nodeArgs, ROOT } from '../root.js';

const SMALL = ['--guests', '30', '--conversations', '50', '--messages', '200', '--tasks', '20', '--knowledge', '10'];

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function seed(args: string[], databaseUrl: string, env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [...nodeArgs('src/cli/index.ts'), 'seed', ...args],
      { cwd: ROOT, env: { ...process.env, DATABASE_URL: databaseUrl, ...env }, timeout: 120_000 },
      (err, stdout, stderr) => {
        const code = err === null ? 0 : typeof err.code === 'number' ? err.code : -1;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

interface Login {
  role: string;
  email: string;
  password: string;
}

/** The rows of the printed login table: role, e-mail, password. */
const logins = (stdout: string): Login[] =>
  [...stdout.matchAll(/^ {2}(admin|manager|staff) +(\S+@\S+) +(\S+)/gm)].map((m) => ({
    role: m[1]!,
    email: m[2]!,
    password: m[3]!,
  }));

async function logIn(app: FastifyInstance, who: Login): Promise<string> {
  const res = await login(app, who.email, who.password);
  assert.equal(res.status, 200, `login as ${who.email}: ${JSON.stringify(res.body)}`);
  assert.equal(res.data.user.role, who.role);
  return res.data.token;
}

async function counts(app: FastifyInstance) {
  const db = app.ctx.store.db;
  const n = async (
    table: 'staff' | 'guests' | 'stays' | 'conversations' | 'messages' | 'tasks' | 'knowledge_entries',
  ) =>
    Number(
      (
        await db
          .selectFrom(table)
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );
  return {
    staff: await n('staff'),
    guests: await n('guests'),
    stays: await n('stays'),
    conversations: await n('conversations'),
    messages: await n('messages'),
    tasks: await n('tasks'),
    knowledge: await n('knowledge_entries'),
  };
}

/** Every invariant the API relies on, checked over all seeded rows. */
async function assertConsistent(app: FastifyInstance) {
  const db = app.ctx.store.db;
  const staffIds = new Set((await db.selectFrom('staff').select('id').execute()).map((r) => r.id));

  const guests = await db.selectFrom('guests').selectAll().execute();
  const tagRows = await db.selectFrom('guest_tags').select(['guest_id', 'tag']).execute();
  for (const g of guests) {
    assert.equal(g.search_text, `${g.name} ${g.email ?? ''} ${g.phone ?? ''}`.toLowerCase());
    assert.equal(g.email_lower, g.email?.toLowerCase() ?? null);
    if (g.phone !== null) assert.match(g.phone, /^\+[1-9]\d{6,14}$/);
    const tags = fromJson<string[]>(g.tags);
    assert.equal(new Set(tags).size, tags.length, 'tags are de-duplicated');
    const rows = tagRows.filter((t) => t.guest_id === g.id).map((t) => t.tag);
    assert.deepEqual(rows.sort(), [...tags].sort(), `guest_tags of ${g.id}`);
  }
  assert.equal(
    tagRows.length,
    guests.reduce((a, g) => a + fromJson<string[]>(g.tags).length, 0),
  );

  const conversations = new Map((await db.selectFrom('conversations').selectAll().execute()).map((c) => [c.id, c]));
  const messages = await db
    .selectFrom('messages')
    .selectAll()
    .orderBy('conversation_id')
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  const byConversation = new Map<string, typeof messages>();
  for (const m of messages) {
    assert.ok(conversations.has(m.conversation_id), 'a message belongs to a seeded conversation');
    byConversation.set(m.conversation_id, [...(byConversation.get(m.conversation_id) ?? []), m]);
  }
  for (const c of conversations.values()) {
    if (c.assignee !== null) assert.ok(staffIds.has(c.assignee), 'assignee is a staff member');
    const thread = byConversation.get(c.id) ?? [];
    assert.equal(c.message_count, thread.length, `message_count of ${c.id}`);
    const last = thread.at(-1);
    assert.equal(toIso(c.last_message_at), last ? toIso(last.created_at) : toIso(c.created_at));
    let expect: 'inbound' | 'outbound' = 'inbound';
    thread.forEach((m, i) => {
      if (i > 0) assert.ok(toIso(m.created_at) > toIso(thread[i - 1]!.created_at), 'times increase');
      if (m.type === 'note') {
        assert.equal(m.sender_type, 'staff');
        return;
      }
      assert.equal(m.direction, expect, `direction alternates in ${c.id}`);
      if (m.direction === 'inbound') {
        assert.deepEqual([m.sender_type, m.sender_id, m.delivery_status], ['guest', c.guest_id, 'received']);
      } else {
        assert.equal(m.sender_type, 'staff');
        assert.ok(staffIds.has(m.sender_id!));
        assert.ok(['sent', 'delivered'].includes(m.delivery_status));
      }
      expect = expect === 'inbound' ? 'outbound' : 'inbound';
    });
  }

  for (const t of await db.selectFrom('tasks').selectAll().execute()) {
    assert.equal(t.completed_at !== null, t.status === 'completed', `completed_at of ${t.id} (${t.status})`);
    assert.ok(DEFAULT_DEPARTMENTS.includes(t.department));
    if (t.conversation_id !== null) assert.equal(t.guest_id, conversations.get(t.conversation_id)?.guest_id);
    if (t.assignee !== null) assert.ok(staffIds.has(t.assignee));
  }
  // A hotel's day: each stay a real span of a seeded guest; some guests in house, some arriving today.
  const guestIds = new Set(guests.map((g) => g.id));
  const stays = await db.selectFrom('stays').selectAll().execute();
  for (const s of stays) {
    assert.ok(guestIds.has(s.guest_id), 'a stay belongs to a seeded guest');
    assert.ok(s.check_out > s.check_in, `checkOut after checkIn in ${s.id}`);
  }
  const today = dayIn('UTC');
  assert.ok(stays.some((s) => s.status === 'in_house' && s.check_in <= today && s.check_out > today));
  assert.ok(stays.some((s) => s.status === 'booked' && s.check_in === today));
  assert.ok(stays.some((s) => s.status === 'checked_out' && s.check_out <= today));
  if (TEST_STORE === 'sqlite') {
    // The seeder writes with foreign keys off on SQLite, so check that every reference resolves.
    const broken = await sql`pragma foreign_key_check`.execute(db);
    assert.deepEqual(broken.rows, []);
  }
}

test('seed on a fresh store', async (t) => {
  const url = await freshDatabaseUrl(t);
  const first = await seed(SMALL, url);
  const accounts = logins(first.stdout);
  const app = await buildTestApp(t, { DATABASE_URL: url });

  await t.test('exits 0, reports progress on stderr and prints a login table', () => {
    assert.equal(first.code, 0, first.stderr);
    assert.match(first.stderr, /^messages +\[#+\] 200\/200 100%/m);
    assert.match(first.stdout, /12 created, 0 reused/);
    assert.deepEqual([...new Set(accounts.map((a) => a.role))].sort(), ['admin', 'manager', 'staff']);
    for (const a of accounts) assert.ok(a.password.length >= 12);
  });

  await t.test('the printed admin and a printed staff member can log in; GET /staff shows each role', async () => {
    const adminToken = await logIn(app, accounts.find((a) => a.role === 'admin')!);
    await logIn(app, accounts.find((a) => a.email === 'housekeeping1@demo.hotel')!);
    const staff = await call(app, 'GET', '/staff?limit=100', { token: adminToken });
    assert.equal(staff.status, 200);
    const roles = new Set(staff.data.map((s: { role: string }) => s.role));
    assert.deepEqual([...roles].sort(), ['admin', 'manager', 'staff']);
    assert.equal(staff.body.meta.total, accounts.length);
  });

  await t.test('writes as many rows as asked for', async () => {
    const expected = { staff: 12, guests: 30, stays: 36, conversations: 50, messages: 200, tasks: 20, knowledge: 10 };
    assert.deepEqual(await counts(app), expected);
  });

  await t.test('rows are consistent: counters, last message times, tags, threads, tasks', async () => {
    await assertConsistent(app);
  });

  await t.test('a second run reuses the accounts and adds rows without a unique violation', async () => {
    const second = await seed(SMALL, url);
    assert.equal(second.code, 0, second.stderr);
    assert.match(second.stdout, /0 created, 12 reused/);
    const expected = { staff: 12, guests: 60, stays: 72, conversations: 100, messages: 400, tasks: 40, knowledge: 20 };
    assert.deepEqual(await counts(app), expected);
    await logIn(app, logins(second.stdout).find((a) => a.role === 'manager')!);
    await assertConsistent(app);
  });
});

test('seed refuses bad options with one line and exit code 1, before touching the store', async (t) => {
  const url = await freshDatabaseUrl(t);
  const cases = [
    ['--guests', '-1'],
    ['--guests', 'abc'],
    ['--guests=-1'],
    ['--guests', '1.5'],
    ['--guests'],
    ['--bogus', '3'],
    ['--batch', '0'],
    ['--conversations', '5', '--guests', '0'],
  ];
  const runs = await Promise.all(cases.map((args) => seed(args, url)));
  runs.forEach((run, i) => {
    const args = cases[i]!.join(' ');
    assert.equal(run.code, 1, `${args}: ${run.stderr}`);
    assert.equal(run.stdout, '', args);
    assert.match(run.stderr, /^seed: [^\n]+\n$/, `${args}: one line`);
    assert.match(run.stderr, /--[a-z]+/, `${args}: names the option`);
  });
  assert.match(runs[0]!.stderr, /--guests: must be a whole number from 0 to [\d,]+, got "-1"/);
  if (TEST_STORE === 'sqlite') assert.equal(existsSync(url.slice('sqlite:'.length)), false, 'no store was created');
});

test('seed refuses under NODE_ENV=production unless given --force', async (t) => {
  const url = await freshDatabaseUrl(t);
  const production = { NODE_ENV: 'production', JWT_SECRET: 'a-production-secret-that-is-long-enough-0123' };
  const small = ['--guests', '1', '--conversations', '0', '--messages', '0', '--tasks', '0', '--knowledge', '0'];
  const refused = await seed(small, url, production);
  assert.equal(refused.code, 1, refused.stderr);
  assert.equal(refused.stdout, '');
  assert.match(refused.stderr, /^seed: [^\n]*NODE_ENV=production[^\n]*--force[^\n]*\n$/);
  if (TEST_STORE === 'sqlite') assert.equal(existsSync(url.slice('sqlite:'.length)), false, 'no store was created');
  const forced = await seed([...small, '--force'], url, production);
  assert.equal(forced.code, 0, forced.stderr);
});
