// Owns the reports benchmark (`npm run bench:reports`): every report over 366 days on a store
// seeded with a year of history (the seed command's `--days 366`: waits, replies, closes, tasks),
// timed one request at a time in process (the report's own reads and arithmetic, no HTTP), on
// SQLite and PostgreSQL; prints the p50 and p90 of each. docs/reports.md keeps the figures.
//
//   npm run bench:reports -- --conversations 1000000        seed fresh stores, then time
//   npm run bench:reports -- --sqlite-file F --pg-url URL   time stores seeded before
//   --runs N (default 15), --only sqlite|postgres
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { openStore, type Store } from '../src/db/store.js';
import type { Granularity } from '../src/modules/reports/buckets.js';
import {
  breakdown,
  type Period,
  SERIES_METRICS,
  type SeriesMetric,
  summary,
  timeseries,
} from '../src/modules/reports/service.js';

const say = (t: string) => process.stdout.write(`${t}\n`);
const arg = (name: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i < 0 ? undefined : process.argv[i + 1];
};
const DAY = 86_400_000;
const PG_ADMIN = process.env.TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

function seed(databaseUrl: string, conversations: number): Promise<void> {
  const args = [
    // The seed keeps a year's facts in memory to sum them (about 9M at 1M conversations).
    '--max-old-space-size=6144',
    '--import',
    'tsx',
    'src/cli/index.ts',
    'seed',
    '--guests',
    String(Math.max(100, Math.round(conversations / 10))),
    '--conversations',
    String(conversations),
    '--messages',
    String(conversations * 4),
    '--tasks',
    String(Math.round(conversations / 5)),
    '--days',
    '366',
  ];
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, {
      env: { ...process.env, DATABASE_URL: databaseUrl },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`seed exited with ${code}`))));
  });
}

interface Case {
  name: string;
  run: (s: Store) => Promise<unknown>;
}

function cases(staffId: string | null): Case[] {
  const now = Date.now();
  const year: Period = { from: now - 366 * DAY, to: now, biz: true };
  const out: Case[] = [
    { name: 'summary', run: (s) => summary(s, year) },
    { name: 'summary, wall time', run: (s) => summary(s, { ...year, biz: false }) },
    { name: 'summary ?channel=whatsapp', run: (s) => summary(s, { ...year, channel: 'whatsapp' }) },
    { name: 'summary ?department=housekeeping', run: (s) => summary(s, { ...year, department: 'housekeeping' }) },
  ];
  if (staffId !== null)
    out.push({ name: 'summary ?assignee=…', run: (s) => summary(s, { ...year, assignee: staffId }) });
  for (const by of ['channel', 'assignee', 'department'] as const) {
    out.push({ name: `breakdown ?by=${by}`, run: (s) => breakdown(s, year, by) });
  }
  for (const [tz, g] of [
    ['UTC', 'day'],
    ['Europe/Lisbon', 'day'],
    ['Asia/Kolkata', 'day'],
    ['Europe/Lisbon', 'week'],
    ['Europe/Lisbon', 'month'],
  ] as [string, Granularity][]) {
    for (const metric of Object.keys(SERIES_METRICS) as SeriesMetric[]) {
      if (g !== 'day' && metric !== 'reply_time') continue;
      if (tz !== 'Europe/Lisbon' && !['reply_time', 'messages_inbound'].includes(metric)) continue;
      out.push({ name: `timeseries ${metric} ${g} ${tz}`, run: (s) => timeseries(s, year, metric, g, tz) });
    }
  }
  return out;
}

async function time(store: Store, label: string, runs: number): Promise<void> {
  const staff = await store.db.selectFrom('staff').select('id').where('role', '=', 'staff').limit(1).executeTakeFirst();
  const facts = await store.db
    .selectFrom('report_facts' as never)
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirst();
  const conv = await store.db
    .selectFrom('conversations')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirst();
  say(
    `\n[${label}] ${Number(conv?.n).toLocaleString('en-US')} conversations, ${Number((facts as { n: number } | undefined)?.n).toLocaleString('en-US')} facts; ${runs} runs each after 2 warm-ups`,
  );
  say(`  ${'report over 366 days'.padEnd(52)}${'p50 ms'.padStart(9)}${'p90 ms'.padStart(9)}`);
  for (const c of cases(staff?.id ?? null)) {
    for (let i = 0; i < 2; i++) await c.run(store);
    const t: number[] = [];
    for (let i = 0; i < runs; i++) {
      const a = performance.now();
      await c.run(store);
      t.push(performance.now() - a);
    }
    t.sort((x, y) => x - y);
    const p = (q: number) => t[Math.min(t.length - 1, Math.ceil(q * t.length) - 1)]!.toFixed(1);
    say(`  ${c.name.padEnd(52)}${p(0.5).padStart(9)}${p(0.9).padStart(9)}`);
  }
}

async function main() {
  const runs = Number(arg('runs') ?? 15);
  const only = arg('only');
  const conversations = Number(arg('conversations') ?? 0);
  let sqliteFile = arg('sqlite-file');
  let pgUrl = arg('pg-url');
  let dropPg: string | null = null;
  if (conversations > 0) {
    if (only !== 'postgres' && sqliteFile === undefined) {
      sqliteFile = join(mkdtempSync(join(tmpdir(), 'gma-bench-reports-')), 'seed.db');
      say(`seeding ${conversations.toLocaleString('en-US')} conversations into ${sqliteFile}`);
      await seed(`sqlite:${sqliteFile}`, conversations);
    }
    if (only !== 'sqlite' && pgUrl === undefined) {
      dropPg = `gma_bench_reports_${randomBytes(4).toString('hex')}`;
      const admin = new pg.Client({ connectionString: PG_ADMIN });
      await admin.connect();
      await admin.query(`create database ${dropPg}`);
      await admin.end();
      const u = new URL(PG_ADMIN);
      u.pathname = `/${dropPg}`;
      pgUrl = u.toString();
      say(`seeding ${conversations.toLocaleString('en-US')} conversations into PostgreSQL ${dropPg}`);
      await seed(pgUrl, conversations);
      const c = new pg.Client({ connectionString: pgUrl });
      await c.connect();
      await c.query('vacuum analyze');
      await c.end();
    }
  }
  if (sqliteFile !== undefined && only !== 'postgres') {
    const s = openStore({ kind: 'sqlite', path: sqliteFile });
    await time(s, 'sqlite', runs).finally(() => s.close());
  }
  if (pgUrl !== undefined && only !== 'sqlite') {
    const s = openStore({ kind: 'postgres', url: pgUrl });
    await time(s, 'postgres', runs).finally(() => s.close());
  }
  if (dropPg !== null && process.argv.includes('--keep') === false)
    say(`(PostgreSQL database ${dropPg} kept for reuse: --pg-url)`);
}

await main();
