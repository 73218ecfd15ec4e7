// Owns the `seed` command: its options, the demo staff with known passwords, the order of the
// data phases (guests, their stays, conversations, messages, tasks, knowledge), and the summary
// with counts, timings and the login table.
import { type Kysely, sql } from 'kysely';
import type { Config } from '../config.js';
import { migrate } from '../db/migrate.js';
import { openStore } from '../db/store.js';
import type { Database, Executor } from '../db/types.js';
import { hashPassword } from '../lib/password.js';
import { DEFAULT_DEPARTMENTS } from '../modules/settings/registry.js';
import { insertStaff } from '../modules/staff/repository.js';
import { hotelToday } from '../modules/stays/dates.js';
import { DEMO_PASSWORD, STAFF_NAMES } from './seed-data.js';
import {
  type PhaseResult,
  type SeedStaff,
  seedConversations,
  seedGuests,
  seedMessages,
  type World,
} from './seed-generate.js';
import { seedKnowledge, seedTasks } from './seed-operations.js';
import { formatCount, MAX_GUEST_SEQUENCE, type SeedOptions } from './seed-options.js';
import { seedReports } from './seed-reports.js';
import { seedStays } from './seed-stays.js';
import { BulkWriter } from './seed-writer.js';

const EMAIL_STEM: Record<string, string> = { 'front-desk': 'frontdesk', 'food-and-beverage': 'fnb' };

function demoStaff(): Omit<SeedStaff, 'id' | 'created'>[] {
  const members: Omit<SeedStaff, 'id' | 'created'>[] = [
    { email: 'admin@demo.hotel', name: 'Alex Morgan', role: 'admin', department: null },
    { email: 'manager@demo.hotel', name: 'Sam Rivera', role: 'manager', department: 'front-desk' },
  ];
  DEFAULT_DEPARTMENTS.forEach((dept, d) => {
    for (let k = 1; k <= 2; k++) {
      const stem = EMAIL_STEM[dept] ?? dept.replace(/[^a-z0-9]/g, '');
      const name = STAFF_NAMES[(d * 2 + k - 1) % STAFF_NAMES.length]!;
      members.push({ email: `${stem}${k}@demo.hotel`, name, role: 'staff', department: dept });
    }
  });
  return members;
}

/** The tables whose rows triggers keep as the lists' totals (migrations 002, 011, 013, 014). */
const COUNT_TABLES = ['conversation_counts', 'task_counts', 'guest_counts', 'staff_guest_counts', 'staff_tag_counts'];

/**
 * PostgreSQL: a bulk load leaves the count tables with one dead row version per row it counted
 * (each insert's trigger updates a count row), and plain (auto)vacuum only marks that space free:
 * every list's total then reads pages of dead versions (at 10k conversations the status total
 * read 107 pages for 518 rows, over half its list statement's time). Rewritten, they are a few
 * pages again. Each is small, so its exclusive lock is short.
 */
async function compactCounts(db: Kysely<Database>): Promise<void> {
  for (const table of COUNT_TABLES) await sql`vacuum (full, analyze) ${sql.table(table)}`.execute(db);
}

/**
 * SQLite: the seed writes gigabytes in long transactions; in WAL mode every page goes to the log
 * and then again into the file (a worker copying it back meanwhile, src/db/checkpointer.ts). With
 * the rollback journal in memory and no syncs each page is written once. Only while nothing else
 * has the store open (switching out of WAL needs that); a crash mid-seed may then leave a damaged
 * file, which a demo store can afford. The store is back in WAL mode when the seed ends (and
 * synchronous as the connection had it: NORMAL for the seed, the server sets its own).
 */
async function bulkJournal(db: Kysely<Database>): Promise<boolean> {
  try {
    const { rows } = await sql<{ journal_mode: string }>`pragma journal_mode = memory`.execute(db);
    if (rows[0]?.journal_mode !== 'memory') return false;
    await sql`pragma synchronous = off`.execute(db);
    return true;
  } catch {
    return false;
  }
}

/** The demo accounts: existing ones (a second run) are reused as they are, missing ones created. */
async function ensureStaff(db: Executor): Promise<SeedStaff[]> {
  const wanted = demoStaff();
  const existing = await db
    .selectFrom('staff')
    .select(['id', 'email_lower'])
    .where(
      'email_lower',
      'in',
      wanted.map((s) => s.email),
    )
    .execute();
  const idByEmail = new Map(existing.map((r) => [r.email_lower, r.id]));
  // Argon2id is slow on purpose; every demo account shares one password, so hash it once.
  let hash: Promise<string> | undefined;
  const out: SeedStaff[] = [];
  for (const s of wanted) {
    const id = idByEmail.get(s.email);
    if (id !== undefined) {
      out.push({ ...s, id, created: false });
      continue;
    }
    hash ??= hashPassword(DEMO_PASSWORD);
    const row = await insertStaff(db, { ...s, passwordHash: await hash });
    out.push({ ...s, id: row.id, created: true });
  }
  return out;
}

function duration(ms: number): string {
  const s = ms / 1000;
  return s < 60 ? `${s.toFixed(1)}s` : `${Math.floor(s / 60)}m ${(s % 60).toFixed(1)}s`;
}

function summary(dialect: string, totalMs: number, staff: SeedStaff[], phases: [string, PhaseResult][]): string {
  const lines = [`Seeded demo data into ${dialect} in ${duration(totalMs)}.`, ''];
  lines.push(`  ${'entity'.padEnd(14)}${'rows'.padStart(13)}${'seconds'.padStart(10)}${'rows/s'.padStart(12)}`);
  for (const [name, r] of phases) {
    const rate = r.rows / Math.max(r.ms / 1000, 1e-3);
    lines.push(
      `  ${name.padEnd(14)}${formatCount(r.rows).padStart(13)}${(r.ms / 1000).toFixed(1).padStart(10)}${formatCount(rate).padStart(12)}`,
    );
    if (name === 'guests') lines.push(`  ${'guest tags'.padEnd(14)}${formatCount(r.extraRows ?? 0).padStart(13)}`);
  }
  const created = staff.filter((s) => s.created).length;
  lines.push(
    `  ${'staff'.padEnd(14)}${formatCount(staff.length).padStart(13)}   (${created} created, ${staff.length - created} reused)`,
  );
  lines.push('', 'Log in with (POST /api/v1/auth/login):');
  lines.push(`  ${'role'.padEnd(9)}${'email'.padEnd(30)}${'password'.padEnd(22)}department`);
  for (const s of staff) {
    const note = s.created ? '' : '  (existing account, password as it was)';
    lines.push(`  ${s.role.padEnd(9)}${s.email.padEnd(30)}${DEMO_PASSWORD.padEnd(22)}${s.department ?? '-'}${note}`);
  }
  return `${lines.join('\n')}\n`;
}

export async function runSeed(config: Config, options: SeedOptions): Promise<void> {
  const started = performance.now();
  // Demo data can be re-created at will, so a power cut losing the last commits costs nothing:
  // NORMAL skips the fsync per commit that FULL pays (WAL stays consistent either way).
  const store = openStore(config.store, { sqliteSynchronous: 'NORMAL', pgPoolSize: 2 });
  let bulk = false;
  try {
    await migrate(store);
    if (store.dialect === 'sqlite') {
      // A 512 MiB page cache keeps the tables' indexes in memory while they grow (the default is 2 MiB).
      await sql`pragma cache_size = -524288`.execute(store.db);
      // Every reference the seeder writes points at a row it wrote (or read) just before, so the
      // per-row foreign-key lookups (a third of SQLite's insert time) only cost. This connection only.
      await sql`pragma foreign_keys = off`.execute(store.db);
      bulk = await bulkJournal(store.db);
    }
    const staff = await ensureStaff(store);
    const stored = await store.db
      .selectFrom('guests')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    // E-mails and phones are numbered after the guests already stored, so a second run never repeats one.
    const seqStart = Number(stored.n);
    if (seqStart + options.guests > MAX_GUEST_SEQUENCE) {
      throw new Error(`the store would hold more than ${formatCount(MAX_GUEST_SEQUENCE)} guests`);
    }
    const world: World = {
      nowMs: Date.now(),
      staff,
      guestIds: [],
      guestFirst: new Uint8Array(0),
      guestContact: new Uint8Array(0),
      convIds: [],
      convCreated: new Float64Array(0),
      convGuest: new Int32Array(0),
      convTopic: new Uint8Array(0),
      convAssignee: new Int16Array(0),
      convCount: new Int32Array(0),
      salt: (Math.random() * 2 ** 32) >>> 0,
      days: options.days,
    };
    const w = new BulkWriter(store);
    const { batch } = options;
    const phases: [string, PhaseResult][] = [];
    phases.push(['guests', await seedGuests(w, world, options.guests, seqStart, batch)]);
    phases.push(['stays', await seedStays(w, world, await hotelToday(store), batch)]);
    phases.push(['conversations', await seedConversations(w, world, options.conversations, options.messages, batch)]);
    phases.push(['messages', await seedMessages(w, world, options.messages, batch)]);
    phases.push(['tasks', await seedTasks(w, world, options.tasks, batch)]);
    phases.push(['knowledge', await seedKnowledge(w, world, options.knowledge, batch)]);
    phases.push([
      'report facts',
      await seedReports(store, world, config.store.kind === 'postgres' ? config.store.url : undefined),
    ]);
    if (store.dialect === 'postgres') await compactCounts(store.db);
    if (bulk) {
      await sql`pragma journal_mode = wal`.execute(store.db);
      await sql`pragma synchronous = normal`.execute(store.db);
      bulk = false;
    }
    process.stdout.write(summary(store.dialect, performance.now() - started, staff, phases));
  } finally {
    // A seed that failed half-way leaves the store in WAL mode too (what it wrote before stays).
    if (bulk) await sql`pragma journal_mode = wal`.execute(store.db).catch(() => {});
    await store.close();
  }
}
