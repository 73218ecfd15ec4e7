// Measures the label filter of GET /conversations and GET /conversations/:id/suggestions at size:
// writes N conversations (default 1,000,000) with labels straight into a fresh store, then times
// each request through app.inject and prints p50 and p95 (figures, never asserted). Run with
// `node --import tsx bench/labels.ts [conversations] [sqlite|postgres]`; PostgreSQL uses a new
// database on TEST_PG_URL (default postgres://postgres@127.0.0.1:5432/postgres), dropped afterwards.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import pg from 'pg';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { migrate } from '../src/db/migrate.js';
import { openStore, type Store } from '../src/db/store.js';
import { insertStaff } from '../src/modules/staff/repository.js';

const N = Number(process.argv[2] ?? 1_000_000);
const KIND = process.argv[3] === 'postgres' ? 'postgres' : 'sqlite';
const GUESTS = 1000;
const WORDS = (
  'breakfast dinner lunch restaurant bar pool spa gym sauna towel towels pillow blanket room suite checkout ' +
  'checkin late early parking taxi airport shuttle wifi password laundry iron minibar safe key card lift ' +
  'elevator balcony view sea garden terrace reception concierge tour museum beach umbrella kids crib pets ' +
  'dog allergy gluten vegan menu wine coffee tea water bottle noise quiet cleaning housekeeping shower bath'
).split(' ');
const say = (text: string) => process.stdout.write(`${text}\n`);

/** Label of conversation i: vip 2 %, late-checkout 10 %, complaint 0.1 %, about 88 % none. */
const LABELS: [string, string][] = [
  ['vip', 'i % 50 = 0'],
  ['late-checkout', 'i % 10 = 3'],
  ['complaint', 'i % 1000 = 7'],
];

async function seed(store: Store, url: string): Promise<void> {
  const db = store.db;
  // PostgreSQL: a client of its own, without the store's statement timeout (a 1M-row insert is long).
  const client = store.dialect === 'postgres' ? new pg.Client({ connectionString: url }) : null;
  await client?.connect();
  // PostgreSQL's per-row count triggers make a 1M-row insert take many minutes: they are off for
  // this session (superuser), and the counts they keep are written once at the end instead.
  await client?.query('set session_replication_role = replica');
  const series =
    store.dialect === 'sqlite'
      ? (n: number) =>
          `(with recursive s(i) as (select 1 union all select i + 1 from s where i < ${n}) select i from s)`
      : (n: number) => `(select generate_series(1, ${n}) as i)`;
  const pad = (prefix: string) =>
    store.dialect === 'sqlite' ? `printf('${prefix}_%026d', i)` : `'${prefix}_' || lpad(i::text, 26, '0')`;
  const at = (base: string) =>
    store.dialect === 'sqlite'
      ? `strftime('%Y-%m-%dT%H:%M:%fZ', '${base}', '+' || (i * 30) || ' seconds')`
      : `timestamptz '${base}' + (i * 30) * interval '1 second'`;
  const run = async (text: string) => {
    if (client !== null) await client.query(text);
    else await sql.raw(text).execute(db);
  };
  await run(`insert into guests (id, name, email, email_lower, phone, tags, notes, search_text, created_at, updated_at)
    select ${pad('gst')}, 'Guest ' || i, null, null, null, '[]', null, 'guest ' || i, ${at('2025-01-01T00:00:00Z')},
      ${at('2025-01-01T00:00:00Z')} from ${series(GUESTS)} s`);
  const status = `case when i % 3 = 0 then 'closed' when i % 3 = 1 then 'open' else 'pending' end`;
  const labels = `'[' || ${LABELS.map(([l, w]) => `case when ${w} then '"${l}"' else '' end`).join(` || `)} || ']'`;
  const started = Date.now();
  await run(`insert into conversations (id, guest_id, channel, status, assignee, subject, last_message_at, message_count,
      labels, created_at, updated_at)
    select ${pad('cnv')}, ${store.dialect === 'sqlite' ? `printf('gst_%026d', 1 + i % ${GUESTS})` : `'gst_' || lpad((1 + i % ${GUESTS})::text, 26, '0')`},
      'web', ${status}, null, null, ${at('2026-01-01T00:00:00Z')}, 0,
      ${store.dialect === 'sqlite' ? labels : `(${labels})::jsonb`}, ${at('2026-01-01T00:00:00Z')}, ${at('2026-01-01T00:00:00Z')}
    from ${series(N)} s`);
  for (const [label, where] of LABELS) {
    await run(`insert into conversation_labels (conversation_id, label, last_message_at, status, channel, assignee)
      select ${pad('cnv')}, '${label}', ${at('2026-01-01T00:00:00Z')}, ${status}, 'web', null from ${series(N)} s where ${where}`);
  }
  if (client !== null) {
    await run(`insert into guest_counts (id, n) values (1, ${GUESTS})
      on conflict (id) do update set n = excluded.n`);
    await run(`delete from conversation_counts`);
    await run(`insert into conversation_counts (status, channel, assignee_key, slot, n)
      select status, channel, coalesce(assignee, ''), 0, count(*) from conversations group by 1, 2, 3`);
    await run(`insert into conversation_label_counts (label, status, channel, assignee_key, slot, n)
      select label, status, channel, coalesce(assignee, ''), 0, count(*) from conversation_labels group by 1, 2, 3, 4`);
    await client.query('set session_replication_role = origin');
  }
  // A knowledge base of 5,000 entries and 500 canned responses, of words drawn from a hotel's.
  const word = (k: string) =>
    store.dialect === 'sqlite'
      ? `(select w from words where n = abs(${k}) % ${WORDS.length})`
      : `(select w from words where n = abs(${k}) % ${WORDS.length})`;
  await run(`create table words (n integer primary key, w text not null)`);
  await run(`insert into words (n, w) values ${WORDS.map((w, i) => `(${i}, '${w}')`).join(', ')}`);
  // Titles of hotel words; content mostly of 3,000 other words, with a few hotel words, so a hotel
  // word is in about one entry in twelve, as a topic is in a real knowledge base.
  const text = (count: number, seed: string) =>
    Array.from({ length: count }, (_, j) => word(`${seed} * ${7 + j * 13} + ${j * 31}`)).join(` || ' ' || `);
  const filler = (count: number, seed: string) =>
    Array.from({ length: count }, (_, j) => `'x' || (abs(${seed} * ${11 + j * 7} + ${j * 53}) % 3000)`).join(
      ` || ' ' || `,
    );
  await run(`insert into knowledge_entries (id, title, content, category, created_at, updated_at)
    select ${pad('kb')}, ${text(3, 'i')}, ${text(5, 'i * 17')} || ' ' || ${filler(35, 'i')}, 'general', ${at('2025-01-01T00:00:00Z')},
      ${at('2025-01-01T00:00:00Z')} from ${series(5000)} s`);
  await run(`insert into canned_responses (id, shortcode, title, content, created_at, updated_at)
    select ${pad('cr')}, 'c' || i, ${text(3, 'i * 3')}, ${text(4, 'i * 23')} || ' ' || ${filler(26, 'i')}, ${at('2025-01-01T00:00:00Z')},
      ${at('2025-01-01T00:00:00Z')} from ${series(500)} s`);
  await run('drop table words');
  await run('analyze');
  await client?.end();
  say(`seeded ${N} conversations on ${store.dialect} in ${((Date.now() - started) / 1000).toFixed(0)} s`);
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

async function main() {
  let url: string;
  let cleanup: () => Promise<void>;
  if (KIND === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'bench-labels-'));
    url = `sqlite:${join(dir, 'bench.db')}`;
    cleanup = async () => rmSync(dir, { recursive: true, force: true });
  } else {
    const admin = process.env.TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
    const name = `bench_labels_${process.pid}`;
    const client = new pg.Client({ connectionString: admin });
    await client.connect();
    await client.query(`create database ${name}`);
    await client.end();
    const u = new URL(admin);
    u.pathname = `/${name}`;
    url = u.toString();
    cleanup = async () => {
      const c = new pg.Client({ connectionString: admin });
      await c.connect();
      await c.query(`drop database if exists ${name} with (force)`);
      await c.end();
    };
  }
  try {
    const store = openStore(
      KIND === 'sqlite' ? { kind: 'sqlite', path: url.slice('sqlite:'.length) } : { kind: 'postgres', url },
    );
    await migrate(store);
    await seed(store, url);
    await store.close();

    const app = await buildApp(
      loadConfig({
        NODE_ENV: 'test',
        LOG_LEVEL: 'silent',
        DATABASE_URL: url,
        JWT_SECRET: 'x'.repeat(48),
        RATE_LIMIT_STANDARD: '1000000',
      }),
    );
    const staff = await insertStaff(app.ctx.store, {
      name: 'Bench',
      email: 'bench@example.test',
      role: 'admin',
      department: null,
      passwordHash: 'x',
    });
    const { token } = app.ctx.tokens.sign(staff.id, 'admin');
    const get = async (path: string) => {
      const res = await app.inject({ url: `/api/v1${path}`, headers: { authorization: `Bearer ${token}` } });
      if (res.statusCode !== 200) throw new Error(`${path}: ${res.statusCode} ${res.body}`);
      return JSON.parse(res.body);
    };
    const cursor = (await get('/conversations?label=vip&limit=20')).meta.nextCursor as string;
    const paths = [
      '/conversations',
      '/conversations?label=vip',
      '/conversations?label=complaint',
      '/conversations?label=vip&status=open',
      '/conversations?label=vip&page=500',
      `/conversations?label=vip&cursor=${encodeURIComponent(cursor)}`,
      '/conversations?label=vip,complaint',
      '/conversations?label=vip,late-checkout',
      '/conversations?label=nothing',
    ];
    say(`${KIND}, ${N} conversations: p50 / p95 of 40 requests each (ms), and the total`);
    for (const path of paths) {
      const times: number[] = [];
      let total = 0;
      for (let i = 0; i < 45; i++) {
        const t0 = process.hrtime.bigint();
        const body = await get(path);
        const took = Number(process.hrtime.bigint() - t0) / 1e6;
        if (i >= 5) times.push(took);
        total = body.meta.total ?? -1;
      }
      times.sort((a, b) => a - b);
      say(
        `${percentile(times, 50).toFixed(2).padStart(8)} ${percentile(times, 95).toFixed(2).padStart(8)}  ${String(total).padStart(8)}  ${path.slice(0, 60)}`,
      );
    }
    // Suggestions: a conversation whose guest wrote a long-ish message.
    const id = 'cnv_00000000000000000000000001';
    await app.ctx.store.db
      .insertInto('messages')
      .values({
        id: 'msg_00000000000000000000000001',
        conversation_id: id,
        direction: 'inbound',
        type: 'text',
        content:
          'Hello! Could we have a late checkout tomorrow, and is breakfast served on the terrace? ' +
          'Also the wifi password does not work in our room and we need two more towels please.',
        sender_type: 'guest',
        sender_id: null,
        delivery_status: 'received',
        created_at: new Date().toISOString(),
      })
      .execute();
    const times: number[] = [];
    for (let i = 0; i < 45; i++) {
      const t0 = process.hrtime.bigint();
      await get(`/conversations/${id}/suggestions`);
      if (i >= 5) times.push(Number(process.hrtime.bigint() - t0) / 1e6);
    }
    times.sort((a, b) => a - b);
    say(
      `${percentile(times, 50).toFixed(2).padStart(8)} ${percentile(times, 95).toFixed(2).padStart(8)}            suggestions (5,000 entries, 500 canned)`,
    );
    await app.close();
  } finally {
    if (process.env.BENCH_KEEP === undefined) await cleanup();
    else say(`kept ${url}`);
  }
}

await main();
