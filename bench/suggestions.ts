// Owns the suggestions benchmark (docs/productivity.md, Suggestions; docs/search.md, Speed): on a
// store seeded by bench/search.ts (or the demo-data command), adds a knowledge base and canned
// responses of hotel words, then times GET /conversations/:id/suggestions through the app (in
// process, `inject`: the route, the guest's latest message, the ranked match, no network) for
// conversations drawn at random, each answered for its own guest's latest message. Prints p50 / p95
// of the wall time and of the CPU time per request (the app's, and on PostgreSQL its server
// processes'). The entries it adds are deleted at the end. Never asserted: figures to read.
//
//   node --import tsx bench/suggestions.ts (--sqlite-file F | --pg-database DB) [--pg-url U]
//                                          [--knowledge N] [--canned N] [--queries N] [--runs N] [--seed N]
import { randomBytes } from 'node:crypto';
import { cpus, loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { type Kysely, sql } from 'kysely';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import type { Database } from '../src/db/tables.js';
import { InjectTimer, seeded } from './inject-timing.js';
import { cleanupAll, installSignalHandlers, onCleanup } from './proc.js';

const { values: opts } = parseArgs({
  options: {
    'sqlite-file': { type: 'string' },
    'pg-database': { type: 'string' },
    'pg-url': { type: 'string', default: 'postgres://postgres@127.0.0.1:5432' },
    knowledge: { type: 'string', default: '5000' },
    canned: { type: 'string', default: '500' },
    runs: { type: 'string', default: '5' },
    queries: { type: 'string', default: '40' },
    seed: { type: 'string', default: '1' },
  },
});

const random = seeded(Number(opts.seed));

// The entries' words are the guests' own: drawn from stored messages (words of four letters or more,
// so few are stop words). Titles are three of them, contents five among 35 other words, as in
// bench/labels.ts.
let WORDS: string[] = [];
const pick = () => WORDS[Math.floor(random() * WORDS.length)]!;
const filler = (n: number) => Array.from({ length: n }, () => `x${Math.floor(random() * 3000)}`).join(' ');
const phrase = (n: number) => Array.from({ length: n }, pick).join(' ');

// Ids of the entries this bench adds: a prefix no generated id has (ids are time-ordered, not `zzz…`).
const benchId = (prefix: string, i: number) => `${prefix}_zzzz${String(i).padStart(22, '0')}`;

async function addEntries(db: Kysely<Database>, knowledge: number, canned: number): Promise<void> {
  const at = new Date().toISOString();
  for (let i = 0; i < knowledge; i += 500) {
    const rows = Array.from({ length: Math.min(500, knowledge - i) }, (_, j) => ({
      id: benchId('kb', i + j),
      title: phrase(3),
      content: `${phrase(5)} ${filler(35)}`,
      category: 'general',
      created_at: at,
      updated_at: at,
    }));
    await db.insertInto('knowledge_entries').values(rows).execute();
  }
  for (let i = 0; i < canned; i += 500) {
    const rows = Array.from({ length: Math.min(500, canned - i) }, (_, j) => ({
      id: benchId('cr', i + j),
      shortcode: `zzbench${i + j}`,
      title: phrase(3),
      content: `${phrase(4)} ${filler(26)}`,
      created_at: at,
      updated_at: at,
    }));
    await db.insertInto('canned_responses').values(rows).execute();
  }
}

async function removeEntries(db: Kysely<Database>): Promise<void> {
  await db.deleteFrom('knowledge_entries').where('id', 'like', 'kb_zzzz%').execute();
  await db.deleteFrom('canned_responses').where('id', 'like', 'cr_zzzz%').execute();
}

/** The words of the first messages of `ids`' conversations. */
async function vocabulary(db: Kysely<Database>, ids: string[]): Promise<string[]> {
  const rows = await db.selectFrom('messages').select('content').where('conversation_id', 'in', ids).execute();
  const words = new Set<string>();
  for (const r of rows) for (const w of r.content.toLowerCase().match(/\p{L}{4,}/gu) ?? []) words.add(w);
  return [...words].sort();
}

/** Conversations picked at random through an index (by their latest activity), as bench/search.ts does. */
async function sampleConversations(db: Kysely<Database>, n: number): Promise<string[]> {
  const span = await db
    .selectFrom('conversations')
    .select((eb) => [eb.fn.min('last_message_at').as('lo'), eb.fn.max('last_message_at').as('hi')])
    .executeTakeFirstOrThrow();
  const iso = (v: unknown) => (v instanceof Date ? v.toISOString() : String(v));
  const lo = Date.parse(iso(span.lo));
  const hi = Date.parse(iso(span.hi));
  const out: string[] = [];
  for (let i = 0; out.length < n && i < n * 5; i++) {
    const at = new Date(lo + Math.floor(random() * (hi - lo))).toISOString();
    const c = await db
      .selectFrom('conversations')
      .select('id')
      .where('last_message_at', '>=', at)
      .orderBy('last_message_at')
      .orderBy('id')
      .limit(1)
      .executeTakeFirst();
    if (c !== undefined && !out.includes(c.id)) out.push(c.id);
  }
  return out;
}

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
const ms = (n: number) => `${n.toFixed(1)} ms`;

async function main() {
  let url: string;
  if (opts['sqlite-file'] !== undefined) url = `sqlite:${opts['sqlite-file']}`;
  else if (opts['pg-database'] !== undefined) url = `${opts['pg-url']}/${opts['pg-database']}`;
  else throw new Error('give a seeded store: --sqlite-file F or --pg-database DB (bench/search.ts --keep seeds one)');
  const app = await buildApp(
    loadConfig({
      NODE_ENV: 'production',
      LOG_LEVEL: 'silent',
      DATABASE_URL: url,
      JWT_SECRET: randomBytes(32).toString('hex'),
      RATE_LIMIT_STANDARD: '10000000',
    }),
  );
  onCleanup('close the app', () => app.close());
  const db = app.ctx.store.db;
  const onPg = app.ctx.store.dialect === 'postgres';
  await removeEntries(db);
  WORDS = await vocabulary(db, await sampleConversations(db, 200));
  const knowledge = Number(opts.knowledge);
  const canned = Number(opts.canned);
  await addEntries(db, knowledge, canned);
  onCleanup('delete the entries added', () => removeEntries(db));
  if (onPg) await sql`analyze knowledge_entries, canned_responses`.execute(db);
  const messages = await db
    .selectFrom('messages')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  console.log(`store: ${url.replace(/\/\/[^@/]*@/, '//')}, ${Number(messages.n).toLocaleString('en-US')} messages`);
  console.log(
    `added ${knowledge.toLocaleString('en-US')} knowledge entries and ${canned} canned responses, of ${WORDS.length} words`,
  );

  const admin = await db.selectFrom('staff').select('id').where('role', '=', 'admin').executeTakeFirstOrThrow();
  const headers = { authorization: `Bearer ${app.ctx.tokens.sign(admin.id, 'admin').token}` };
  const ids = await sampleConversations(db, Number(opts.queries));

  const timer = new InjectTimer(db);
  const runs = Number(opts.runs);
  console.log(
    `\n${ids.length} conversations, ${runs} timed runs of each after one warm-up run (figures include the machine's load)`,
  );
  console.log(
    `load average at start: ${loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')} (${cpus().length} CPUs)`,
  );
  const times: number[] = [];
  const cpu: number[] = [];
  const found: number[] = [];
  for (const id of ids) {
    const url = `/api/v1/conversations/${id}/suggestions`;
    const first = await app.inject({ method: 'GET', url, headers });
    if (first.statusCode !== 200) throw new Error(`${url}: ${first.statusCode} ${first.body}`);
    const data = first.json().data as { knowledge: unknown[]; cannedResponses: unknown[] };
    found.push(data.knowledge.length + data.cannedResponses.length);
    if (onPg) await timer.findBackends();
    await timer.time(app, url, headers, runs, { times, cpu });
  }
  times.sort((x, y) => x - y);
  cpu.sort((x, y) => x - y);
  found.sort((x, y) => x - y);
  console.log('                 requests   p50        p95        max        cpu p50    cpu p95    suggested p50');
  console.log(
    `${'suggestions'.padEnd(16)} ${String(times.length).padStart(8)}   ${ms(pct(times, 0.5)).padEnd(10)} ${ms(pct(times, 0.95)).padEnd(10)} ${ms(times[times.length - 1]!).padEnd(10)} ${ms(pct(cpu, 0.5)).padEnd(10)} ${ms(pct(cpu, 0.95)).padEnd(10)} ${pct(found, 0.5)} of 6`,
  );
  console.log(
    `load average at end: ${loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}`,
  );
}

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
