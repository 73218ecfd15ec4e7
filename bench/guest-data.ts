// Measures a guest's export and erase (docs/data-rights.md) at size: writes one guest with N
// messages (default 200,000) in 10 conversations, a message.created event for each, and as many
// events of other guests, straight into a fresh store; then downloads the export over a real port
// (read as it arrives, never kept) while sampling the server's memory, and times the erase.
// Figures, never asserted. Run with `node --import tsx bench/guest-data.ts [messages] [sqlite|postgres]`;
// PostgreSQL uses a new database on TEST_PG_URL (default postgres://postgres@127.0.0.1:5432/postgres),
// dropped afterwards.
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

const N = Number(process.argv[2] ?? 200_000);
const KIND = process.argv[3] === 'postgres' ? 'postgres' : 'sqlite';
const GUEST = 'gst_00000000000000000000000001';
const say = (text: string) => process.stdout.write(`${text}\n`);
const mb = (bytes: number) => `${(bytes / 1048576).toFixed(0)} MB`;

async function seed(store: Store, url: string): Promise<void> {
  const pgsql = store.dialect === 'postgres';
  const series = (n: number) =>
    pgsql
      ? `(select generate_series(1, ${n}) as i)`
      : `(with recursive s(i) as (select 1 union all select i + 1 from s where i < ${n}) select i from s)`;
  const pad = (prefix: string, expr = 'i') =>
    pgsql ? `'${prefix}_' || lpad((${expr})::text, 26, '0')` : `printf('${prefix}_%026d', ${expr})`;
  const at = pgsql
    ? `timestamptz '2026-01-01T00:00:00Z' + i * interval '1 second'`
    : `strftime('%Y-%m-%dT%H:%M:%fZ', '2026-01-01T00:00:00Z', '+' || i || ' seconds')`;
  // PostgreSQL: a client of its own, without the store's statement timeout (the inserts are long).
  const client = pgsql ? new pg.Client({ connectionString: url }) : null;
  await client?.connect();
  const run = async (text: string) => {
    if (client !== null) await client.query(text);
    else await sql.raw(text).execute(store.db);
  };
  await run(`insert into guests (id, name, email, email_lower, phone, tags, notes, search_text, created_at, updated_at)
    values ('${GUEST}', 'Ana Pereira', 'ana@example.pt', 'ana@example.pt', '+351912345678', '[]', 'VIP', 'ana pereira',
      '2025-01-01T00:00:00Z', '2025-01-01T00:00:00Z')`);
  await run(`insert into conversations (id, guest_id, channel, status, assignee, subject, last_message_at, message_count,
      created_at, updated_at)
    select ${pad('cnv')}, '${GUEST}', 'web', 'open', null, 'Booking', '2026-01-01T00:00:00Z', 0, '2025-06-01T00:00:00Z',
      '2025-06-01T00:00:00Z' from ${series(10)} s`);
  await run(`insert into messages (id, conversation_id, direction, type, content, sender_type, sender_id, delivery_status, created_at)
    select ${pad('msg')}, ${pad('cnv', '1 + i % 10')}, 'inbound', 'text',
      'Message ' || i || ' about the late checkout and the airport taxi for Ana Pereira', 'guest', '${GUEST}',
      'received', ${at} from ${series(N)} s`);
  const data = (conversation: string) =>
    pgsql
      ? `json_build_object('id', ${pad('msg')}, 'conversationId', ${conversation}, 'content', 'Message ' || i)::text`
      : `json_object('id', ${pad('msg')}, 'conversationId', ${conversation}, 'content', 'Message ' || i)`;
  // The guest's events, then as many of other conversations: the erase reads them all.
  for (const [conversation, actor] of [
    [pad('cnv', '1 + i % 10'), `'${GUEST}'`],
    [pad('cnv', '100 + i % 5000'), 'null'],
  ] as const) {
    await run(`insert into events (type, occurred_at, actor_type, actor_id, conversation_id, data)
      select 'message.created', ${at}, 'guest', ${actor}, ${conversation}, ${data(conversation)} from ${series(N)} s`);
  }
  await run('analyze');
  await client?.end();
}

async function main() {
  let url: string;
  let cleanup: () => Promise<void>;
  if (KIND === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'bench-guest-data-'));
    url = `sqlite:${join(dir, 'bench.db')}`;
    cleanup = async () => rmSync(dir, { recursive: true, force: true });
  } else {
    const admin = process.env.TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
    const name = `bench_guest_data_${process.pid}`;
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
    const seeded = Date.now();
    await seed(store, url);
    await store.close();
    say(`${KIND}: seeded ${N} messages and ${2 * N} events in ${((Date.now() - seeded) / 1000).toFixed(0)} s`);

    const app = await buildApp(
      loadConfig({ NODE_ENV: 'test', LOG_LEVEL: 'silent', DATABASE_URL: url, JWT_SECRET: 'x'.repeat(48) }),
    );
    const staff = await insertStaff(app.ctx.store, {
      name: 'Bench',
      email: 'bench@example.test',
      role: 'admin',
      department: null,
      passwordHash: 'x',
    });
    const { token } = app.ctx.tokens.sign(staff.id, 'admin');
    const base = await app.listen({ host: '127.0.0.1', port: 0 });
    const headers = { authorization: `Bearer ${token}` };

    global.gc?.();
    const before = process.memoryUsage().rss;
    let peak = before;
    const sampler = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage().rss);
    }, 20);
    const t0 = Date.now();
    const res = await fetch(`${base}/api/v1/guests/${GUEST}/export`, { headers });
    let bytes = 0;
    let firstByte = 0;
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      if (bytes === 0) firstByte = Date.now() - t0;
      bytes += chunk.length;
    }
    const exportMs = Date.now() - t0;
    clearInterval(sampler);
    say(
      `export: ${res.status}, ${mb(bytes)} in ${(exportMs / 1000).toFixed(1)} s (first byte after ${firstByte} ms); ` +
        `server RSS ${mb(before)} before, ${mb(peak)} at most during (+${mb(peak - before)})`,
    );

    const t1 = Date.now();
    const erased = await fetch(`${base}/api/v1/guests/${GUEST}/erase`, { method: 'POST', headers });
    say(`erase: ${erased.status} in ${((Date.now() - t1) / 1000).toFixed(1)} s`);
    const t2 = Date.now();
    const again = await fetch(`${base}/api/v1/guests/${GUEST}/erase`, { method: 'POST', headers });
    say(`erase again: ${again.status} in ${((Date.now() - t2) / 1000).toFixed(1)} s`);
    await app.close();
  } finally {
    await cleanup();
  }
}

await main();
