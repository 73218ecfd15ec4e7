// Owns the message search benchmark (docs/search.md, Speed): seeds a store with many messages
// through the demo-data command (or takes a seeded one), then times GET /messages/search through
// the app (in process, `inject`: the route, the query and the highlight, no network) for queries
// drawn from the stored messages themselves, so common words come up as often as they are written.
// Prints p50 / p95 per kind of query and over all of them. Never asserted: figures to read.
//
//   node --import tsx bench/search.ts [--pg] [--messages 5M] [--sqlite-file F | --pg-database DB]
//                                     [--keep] [--runs N] [--queries N] [--seed N]
// The same --seed on the same store draws the same queries, so two builds can be compared.
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { Kysely } from 'kysely';
import pg from 'pg';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import type { Database } from '../src/db/tables.js';
import { InjectTimer, seeded } from './inject-timing.js';
import { cleanupAll, installSignalHandlers, onCleanup, runNode } from './proc.js';

const ROOT = new URL('..', import.meta.url).pathname;

function count(raw: string): number {
  const m = /^(\d+(?:\.\d+)?)(k|m)?$/i.exec(raw.trim());
  if (m === null) throw new Error(`not a count: ${raw} (like 500k or 5M)`);
  return Math.round(Number(m[1]) * (m[2] === undefined ? 1 : m[2].toLowerCase() === 'k' ? 1e3 : 1e6));
}

const { values: opts } = parseArgs({
  options: {
    pg: { type: 'boolean', default: false },
    messages: { type: 'string', default: '5M' },
    'sqlite-file': { type: 'string' },
    'pg-database': { type: 'string' },
    'pg-url': { type: 'string', default: 'postgres://postgres@127.0.0.1:5432' },
    keep: { type: 'boolean', default: false },
    runs: { type: 'string', default: '5' },
    queries: { type: 'string', default: '40' },
    seed: { type: 'string', default: '1' },
  },
});

const random = seeded(Number(opts.seed));

const messages = count(opts.messages);
// The seed command's proportions: about ten messages a conversation, 0.4 guests a conversation.
const conversations = Math.max(1, Math.round(messages / 10));
const guests = Math.max(1, Math.round(conversations * 0.4));

async function pgAdmin(text: string): Promise<void> {
  const client = new pg.Client({ connectionString: `${opts['pg-url']}/postgres` });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}

async function pgQuery(url: string, text: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}

async function store(): Promise<{ url: string; seeded: boolean }> {
  if (opts['sqlite-file'] !== undefined) return { url: `sqlite:${opts['sqlite-file']}`, seeded: true };
  if (opts['pg-database'] !== undefined) return { url: `${opts['pg-url']}/${opts['pg-database']}`, seeded: true };
  const tag = `bench_search_${randomBytes(4).toString('hex')}`;
  if (opts.pg) {
    await pgAdmin(`create database ${tag}`);
    if (!opts.keep) onCleanup(`drop ${tag}`, () => pgAdmin(`drop database if exists ${tag} with (force)`));
    return { url: `${opts['pg-url']}/${tag}`, seeded: false };
  }
  const file = join(tmpdir(), `${tag}.db`);
  if (!opts.keep)
    onCleanup(
      `rm ${file}`,
      () => rmSync(file, { force: true }),
      () => rmSync(file, { force: true }),
    );
  return { url: `sqlite:${file}`, seeded: false };
}

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
const ms = (n: number) => `${n.toFixed(1)} ms`;

async function main() {
  const { url, seeded } = await store();
  if (!seeded) {
    const t0 = performance.now();
    const args = ['--import', 'tsx', 'src/cli/index.ts', 'seed', '--guests', String(guests)];
    args.push('--conversations', String(conversations), '--messages', String(messages), '--tasks', '0');
    args.push('--knowledge', '0');
    await runNode(args, { ...process.env, DATABASE_URL: url, NODE_ENV: 'development' }, '/dev/stderr', ROOT);
    console.log(
      `seeded ${messages.toLocaleString('en-US')} messages in ${((performance.now() - t0) / 1000).toFixed(0)} s`,
    );
    // As autovacuum would have by the time a store in service is searched: the planner's statistics
    // (PostgreSQL picks between the GIN index and walking the primary key by them).
    if (opts.pg) await pgQuery(url, 'vacuum analyze');
  }
  console.log(`store: ${url.replace(/\/\/[^@/]*@/, '//')}${opts.keep && !seeded ? ' (kept)' : ''}`);

  const config = loadConfig({
    NODE_ENV: 'production',
    LOG_LEVEL: 'silent',
    DATABASE_URL: url,
    JWT_SECRET: randomBytes(32).toString('hex'),
    RATE_LIMIT_STANDARD: '10000000',
    ...(process.env.SEARCH_RECENT_MESSAGES === undefined
      ? {}
      : { SEARCH_RECENT_MESSAGES: process.env.SEARCH_RECENT_MESSAGES }),
  });
  // Building the app applies any migration the store lacks (a new index is built here).
  const t0 = performance.now();
  const app = await buildApp(config);
  console.log(`app built (migrations applied) in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  try {
    // As a store in service has it (the instance's maintenance builds it a minute after start):
    // PostgreSQL's recent index of search (src/modules/search/recent.ts), unless SEARCH_RECENT_MESSAGES=0.
    if (opts.pg || opts['pg-database'] !== undefined) {
      const t1 = performance.now();
      const done = await app.recentSearch.maintain();
      console.log(
        `recent index: ${done.cutoff === null ? 'none' : `from ${done.cutoff}`}${done.built === null ? '' : ` (built in ${((performance.now() - t1) / 1000).toFixed(1)} s)`}`,
      );
    }
    const db = app.ctx.store.db;
    const total = await db
      .selectFrom('messages')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    console.log(`messages: ${Number(total.n).toLocaleString('en-US')}`);
    const admin = await db.selectFrom('staff').select('id').where('role', '=', 'admin').executeTakeFirstOrThrow();
    // The staff member with the most conversations: the widest a staff-scoped search gets.
    const busiest = await db
      .selectFrom('conversations')
      .select(['assignee', (eb) => eb.fn.countAll<number>().as('n')])
      .where('assignee', 'is not', null)
      .groupBy('assignee')
      .orderBy('n', 'desc')
      .limit(1)
      .executeTakeFirstOrThrow();
    const staffRow = await db
      .selectFrom('staff')
      .select(['id', 'role'])
      .where('id', '=', busiest.assignee!)
      .executeTakeFirstOrThrow();
    const adminToken = app.ctx.tokens.sign(admin.id, 'admin').token;
    const staffToken = app.ctx.tokens.sign(staffRow.id, staffRow.role).token;

    // Messages picked at random (by id range, not a scan), their words the queries.
    const sample = await sampleContents(db, Number(opts.queries));
    const words = (text: string) => (text.match(/[\p{L}\p{N}][\p{L}\p{N}\p{M}]*/gu) ?? []).filter((w) => w.length > 2);
    const kinds: Record<string, { q: string; extra: string; token: string }[]> = {
      'one word': [],
      'two words, last a prefix': [],
      'one word, staff-scoped': [],
      'two words, channel filter': [],
    };
    for (const content of sample) {
      const w = words(content);
      if (w.length < 2) continue;
      const a = w[Math.floor(random() * w.length)]!;
      const b = w[Math.floor(random() * w.length)]!;
      kinds['one word']!.push({ q: a, extra: '', token: adminToken });
      kinds['two words, last a prefix']!.push({ q: `${a} ${b.slice(0, 3)}`, extra: '', token: adminToken });
      kinds['one word, staff-scoped']!.push({ q: a, extra: '', token: staffToken });
      kinds['two words, channel filter']!.push({ q: `${a} ${b}`, extra: '&channel=whatsapp', token: adminToken });
    }
    const runs = Number(opts.runs);
    const failed: string[] = [];
    const all: number[] = [];
    const allCpu: number[] = [];
    console.log(
      `\n${runs} timed runs of each query after one warm-up run (the machine may be shared: figures include its load)`,
    );
    // CPU time per request: this process's (on SQLite the whole search: the store runs in process)
    // plus, on PostgreSQL, its server processes' (the backends of this database, read from
    // /proc/<pid>/schedstat, so PostgreSQL must run on this machine). It holds on a loaded machine
    // where wall time does not.
    const onPg = app.ctx.store.dialect === 'postgres';
    const timer = new InjectTimer(db);
    console.log(
      `load average at start: ${loadavg()
        .map((l) => l.toFixed(1))
        .join(' ')} (${cpus().length} CPUs)`,
    );
    console.log(
      'kind                           queries   p50        p95        max        cpu p50    cpu p95    matches p50',
    );
    for (const [kind, list] of Object.entries(kinds)) {
      const times: number[] = [];
      const cpu: number[] = [];
      const matches: number[] = [];
      for (const { q, extra, token } of list) {
        const url = `/api/v1/messages/search?q=${encodeURIComponent(q)}${extra}`;
        const headers = { authorization: `Bearer ${token}` };
        const first = await app.inject({ method: 'GET', url, headers });
        // A search the store gave up on (its statement timeout: a 503) is counted, not timed.
        if (first.statusCode === 503) {
          failed.push(`${kind}: ${q}`);
          continue;
        }
        if (first.statusCode !== 200) throw new Error(`${url}: ${first.statusCode} ${first.body}`);
        matches.push(first.json().meta.total);
        if (onPg) await timer.findBackends();
        await timer.time(app, url, headers, runs, { times, cpu });
      }
      all.push(...times);
      allCpu.push(...cpu);
      times.sort((x, y) => x - y);
      cpu.sort((x, y) => x - y);
      matches.sort((x, y) => x - y);
      console.log(
        `${kind.padEnd(30)} ${String(times.length / runs).padStart(7)}   ${ms(pct(times, 0.5)).padEnd(10)} ${ms(pct(times, 0.95)).padEnd(10)} ${ms(times[times.length - 1]!).padEnd(10)} ${ms(pct(cpu, 0.5)).padEnd(10)} ${ms(pct(cpu, 0.95)).padEnd(10)} ${pct(matches, 0.5)}`,
      );
    }
    all.sort((x, y) => x - y);
    allCpu.sort((x, y) => x - y);
    const blank = ''.padEnd(10);
    console.log(
      `${'all'.padEnd(30)} ${String(all.length / runs).padStart(7)}   ${ms(pct(all, 0.5)).padEnd(10)} ${ms(pct(all, 0.95)).padEnd(10)} ${blank} ${ms(pct(allCpu, 0.5)).padEnd(10)} ${ms(pct(allCpu, 0.95))}`,
    );
    for (const f of failed) console.log(`timed out (503, left out of the figures): ${f}`);
    console.log(
      `load average at end: ${loadavg()
        .map((l) => l.toFixed(1))
        .join(' ')}`,
    );
  } finally {
    await app.close();
  }
}

/**
 * Messages picked at random through indexes (a conversation by its latest activity, then one of its
 * messages), so the same seed draws the same messages from the same data on either store, whatever
 * the table's physical layout.
 */
async function sampleContents(db: Kysely<Database>, n: number): Promise<string[]> {
  const out: string[] = [];
  const span = await db
    .selectFrom('conversations')
    .select((eb) => [eb.fn.min('last_message_at').as('lo'), eb.fn.max('last_message_at').as('hi')])
    .executeTakeFirstOrThrow();
  const lo = Date.parse(String(toIsoText(span.lo)));
  const hi = Date.parse(String(toIsoText(span.hi)));
  for (let i = 0; out.length < n && i < n * 5; i++) {
    const at = new Date(lo + Math.floor(random() * (hi - lo))).toISOString();
    const offset = Math.floor(random() * 10);
    const c = await db
      .selectFrom('conversations')
      .select('id')
      .where('last_message_at', '>=', at)
      .orderBy('last_message_at')
      .orderBy('id')
      .limit(1)
      .executeTakeFirst();
    if (c === undefined) continue;
    const m = await db
      .selectFrom('messages')
      .select('content')
      .where('conversation_id', '=', c.id)
      .orderBy('created_at')
      .orderBy('id')
      .limit(1)
      .offset(offset)
      .executeTakeFirst();
    if (m !== undefined) out.push(m.content);
  }
  return out;
}

const toIsoText = (v: unknown) => (v instanceof Date ? v.toISOString() : String(v));

/** Exits once stdout is written out: a pipe's pending writes are dropped by an early exit. */
const exit = (code: number) => process.stdout.write('', () => process.exit(code));

installSignalHandlers();
main().then(
  () => cleanupAll().then(() => exit(0)),
  (err) => {
    console.error(err);
    void cleanupAll().then(() => exit(1));
  },
);
