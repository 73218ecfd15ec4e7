// Owns the journeys burst benchmark (`npm run bench:journeys`): the real server (a child process) on
// SQLite and on PostgreSQL (with Redis) holds 10,000 guests and their stays with one arrival step
// (a text on sms, channels in dry-run) due in the same minute. The step's moment is set by saving
// the `journeys` setting, so the replan of every stay runs first (timed). At the minute, every
// step must queue its message within 60 s, each once, while staff read GET /conversations
// (autocannon, 4 connections, from just before the minute until the burst is over) with a p99 of
// at most 100 ms (docs/stays.md, At scale). Prints the figures; exits 1 when a target is missed.
//
//   npm run bench:journeys                     both stores, 10,000 stays
//   npm run bench:journeys -- --stays 2000 --only sqlite|postgres
//   npm run bench:journeys -- --no-reads       the burst alone: its statements and CPU per step clean
//   npm run bench:journeys -- --statements     also the statements sent per step, by their first words
//   npm run bench:journeys -- --profile        the server under --cpu-prof: where the burst's CPU goes, per step
//   npm run bench:journeys -- --socket [dir]   the server reaches PostgreSQL on its Unix socket (default
//                                              /var/run/postgresql) instead of TCP (README, DATABASE_URL)
//
// The server counts what it sends to its store (bench/statement-counter.ts): statements and the
// process's CPU per step are taken over the burst, the reads included unless --no-reads.
import { randomBytes } from 'node:crypto';
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import autocannon from 'autocannon';
import { sql } from 'kysely';
import pg from 'pg';
import { openStore, type Store } from '../src/db/store.js';
import { freePort, spawnNode, stopChild, waitForHttp } from './proc.js';
import { formatProfile, monotonicUs, summariseProfile } from './profile.js';

const say = (t: string) => process.stdout.write(`${t}\n`);
const arg = (name: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i < 0 ? undefined : process.argv[i + 1];
};
const STAYS = Number(arg('stays') ?? 10_000);
const ONLY = arg('only');
const READS = !process.argv.includes('--no-reads');
const SHOW_STATEMENTS = process.argv.includes('--statements');
const PROFILE = process.argv.includes('--profile');
/** The directory of PostgreSQL's Unix socket the server connects through, or null: TCP. */
const SOCKET = process.argv.includes('--socket')
  ? arg('socket') !== undefined && !arg('socket')!.startsWith('--')
    ? arg('socket')!
    : '/var/run/postgresql'
  : null;
const PG_ADMIN = process.env.TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const cwd = join(import.meta.dirname, '..');
const DAY = 86_400_000;
/** How far ahead of the set-up's end the minute is put: the replan of every stay fits before it. */
const LEAD_MS = 45_000;
const TARGET_QUEUED_MS = 60_000;
const TARGET_P99_MS = 100;

interface Figures {
  store: string;
  setupS: number;
  replanS: number;
  queuedMs: number | null;
  queued: number;
  duplicates: number;
  done: number;
  p50: number;
  p99: number;
  requests: number;
  non2xx: number;
  /** Over the burst, per step done: statements, round trips, the server's CPU (ms). */
  perStep: {
    statements: number;
    roundTrips: number;
    cpuMs: number;
    /** PostgreSQL: its backends' CPU (ms) on this database, null on SQLite. */
    dbCpuMs: number | null;
    byText: [string, number][];
  } | null;
}

interface Counts {
  roundTrips: number;
  statements: number;
  cpuUs: number;
  byText: Record<string, number>;
}

function readCounts(file: string): Counts | null {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as Counts;
  } catch {
    return null;
  }
}

async function call(base: string, token: string, method: string, path: string, body?: unknown) {
  const res = await fetch(`${base}/api/v1${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  // biome-ignore lint/suspicious/noExplicitAny: the API's JSON.
  const json = (await res.json()) as any;
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json).slice(0, 500)}`);
  return json;
}

/** Runs `fn` over `items` with `n` at once. */
async function pool<T>(items: T[], n: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: n }, async () => {
      while (next < items.length) await fn(items[next++]!);
    }),
  );
}

async function counts(store: Store, moment: string) {
  const db = store.db;
  const queued = await db
    .selectFrom('messages')
    .where('sender_type', '=', 'system')
    .select((eb) => [eb.fn.countAll<number>().as('n'), eb.fn.max('created_at').as('last')])
    .executeTakeFirstOrThrow();
  const done = await db
    .selectFrom('journey_steps')
    .where('status', '=', 'done')
    .where('due_at', '=', moment)
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return { queued: Number(queued.n), last: queued.last, done: Number(done.n) };
}

/**
 * PostgreSQL: CPU time (ns) of each backend on the bench's database, read from /proc/<pid>/schedstat
 * (PostgreSQL must run on this machine); null on SQLite. A backend that exits between two readings
 * takes its time with it, so a difference is a floor.
 */
async function backendsNs(store: Store): Promise<Map<number, number> | null> {
  if (store.dialect !== 'postgres') return null;
  const { rows } = await sql<{ pid: number }>`select pid from pg_stat_activity
    where datname = current_database() and backend_type = 'client backend'`.execute(store.db);
  const out = new Map<number, number>();
  for (const { pid } of rows) {
    try {
      out.set(pid, Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[0]));
    } catch {
      // Gone meanwhile.
    }
  }
  return out;
}

async function scheduledAt(store: Store, moment: string): Promise<number> {
  const r = await store.db
    .selectFrom('journey_steps')
    .where('status', '=', 'scheduled')
    .where('due_at', '=', moment)
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

async function runStore(kind: 'sqlite' | 'postgres'): Promise<Figures> {
  const dir = mkdtempSync(join(tmpdir(), 'gma-bench-journeys-'));
  let databaseUrl: string;
  let open: () => Store;
  let dropDb: (() => Promise<void>) | null = null;
  const extra: NodeJS.ProcessEnv = {};
  if (kind === 'sqlite') {
    databaseUrl = `sqlite:${join(dir, 'bench.db')}`;
    open = () => openStore({ kind: 'sqlite', path: join(dir, 'bench.db') });
  } else {
    const name = `gma_bench_journeys_${randomBytes(4).toString('hex')}`;
    const admin = new pg.Client({ connectionString: PG_ADMIN });
    await admin.connect();
    await admin.query(`create database ${name}`);
    await admin.end();
    const url = new URL(PG_ADMIN);
    url.pathname = `/${name}`;
    const benchUrl = url.toString();
    // The server only: the bench's own counting goes over TCP either way.
    if (SOCKET !== null) url.searchParams.set('host', SOCKET);
    databaseUrl = url.toString();
    open = () => openStore({ kind: 'postgres', url: benchUrl });
    dropDb = async () => {
      const c = new pg.Client({ connectionString: PG_ADMIN });
      await c.connect();
      await c.query(`drop database if exists ${name} with (force)`);
      await c.end();
    };
    extra.REDIS_URL = REDIS_URL;
    extra.REDIS_KEY_PREFIX = `gma-bench-journeys:${randomBytes(4).toString('hex')}:`;
  }
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const email = 'bench@hotel.test';
  const password = 'bench password long enough';
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    NODE_ENV: 'production',
    LOG_LEVEL: 'warn',
    HOST: '127.0.0.1',
    PORT: String(port),
    PUBLIC_URL: base,
    DATABASE_URL: databaseUrl,
    JWT_SECRET: randomBytes(48).toString('base64url'),
    ADMIN_EMAIL: email,
    ADMIN_PASSWORD: password,
    CHANNELS_DRY_RUN: 'true',
    RATE_LIMIT_STANDARD: '10000000',
    RATE_LIMIT_BULK: '10000000',
    ...extra,
  };
  const countsFile = join(dir, 'counts.json');
  env.BENCH_COUNTS_FILE = countsFile;
  const counter = pathToFileURL(join(cwd, 'bench', 'statement-counter.ts')).href;
  const profileDir = join(dir, 'profile');
  const flags = [
    ...(PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : []),
    '--max-semi-space-size=8',
    '--heap-growing-percent=100',
    '--import',
    'tsx',
    '--import',
    counter,
    'src/server.ts',
  ];
  const server = spawnNode(flags, env, join(dir, 'server.log'), cwd);
  let store: Store | null = null;
  let profiled: { window: { fromUs: number; toUs: number }; steps: number } | null = null;
  try {
    await waitForHttp(`${base}/healthz`, server);
    const login = await fetch(`${base}/api/v1/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email, password }),
    });
    const token = ((await login.json()) as { data: { token: string } }).data.token;
    store = open();

    // Guests and their stays arriving tomorrow, the arrival step first planned at tomorrow's 15:00.
    const setupStart = Date.now();
    const tomorrow = new Date(Date.now() + DAY).toISOString().slice(0, 10);
    const after = new Date(Date.now() + 3 * DAY).toISOString().slice(0, 10);
    const arrival = Date.parse(`${tomorrow}T15:00:00.000Z`);
    const step = (offsetMinutes: number) => [
      {
        name: 'arrival',
        when: { event: 'arrival', offsetMinutes },
        channel: 'sms',
        action: { type: 'message', content: 'Welcome {{guest.firstName}}, room {{stay.room}} is ready' },
      },
    ];
    await call(base, token, 'PUT', '/settings/hotel', {
      value: { name: 'Bench Hotel', timezone: 'UTC', locale: 'en', checkInTime: '15:00', checkOutTime: '11:00' },
    });
    await call(base, token, 'PUT', '/settings/journeys', { value: step(0) });
    const batches = Array.from({ length: Math.ceil(STAYS / 100) }, (_, b) => b);
    await pool(batches, 4, async (b) => {
      const n = Math.min(100, STAYS - b * 100);
      const items = Array.from({ length: n }, (_, i) => {
        const k = b * 100 + i;
        return { name: `Guest ${k}`, phone: `+1555${String(1_000_000 + k)}`, externalRef: `P-${k}` };
      });
      const res = await call(base, token, 'POST', '/guests/bulk', { items });
      // biome-ignore lint/suspicious/noExplicitAny: the API's JSON.
      if (res.data.some((r: any) => !r.success)) throw new Error(`guests: ${JSON.stringify(res.data[0])}`);
    });
    await pool(batches, 4, async (b) => {
      const n = Math.min(100, STAYS - b * 100);
      const items = Array.from({ length: n }, (_, i) => {
        const k = b * 100 + i;
        return {
          externalRef: `R-${k}`,
          guestExternalRef: `P-${k}`,
          room: String(k),
          checkIn: tomorrow,
          checkOut: after,
        };
      });
      const res = await call(base, token, 'POST', '/stays/bulk', { items });
      // biome-ignore lint/suspicious/noExplicitAny: the API's JSON.
      if (res.data.some((r: any) => !r.success)) throw new Error(`stays: ${JSON.stringify(res.data[0])}`);
    });
    const setupS = (Date.now() - setupStart) / 1000;

    // The minute: saving the journey with its new offset replans every stay onto it.
    const minute = Math.ceil((Date.now() + LEAD_MS) / 60_000) * 60_000;
    const moment = new Date(minute).toISOString();
    const replanStart = Date.now();
    await call(base, token, 'PUT', '/settings/journeys', { value: step((minute - arrival) / 60_000) });
    let replanS = Number.NaN;
    for (;;) {
      if ((await scheduledAt(store, moment)) === STAYS) {
        replanS = (Date.now() - replanStart) / 1000;
        break;
      }
      if (Date.now() > minute - 3000) break;
      await new Promise((r) => setTimeout(r, 250));
    }
    if (Number.isNaN(replanS)) say(`  ${kind}: the replan did not finish before the minute; the burst runs anyway`);

    // Staff reading the inbox through the burst.
    await new Promise((r) => setTimeout(r, Math.max(0, minute - 2000 - Date.now())));
    const reading = READS
      ? autocannon({
          url: `${base}/api/v1/conversations?limit=25`,
          connections: 4,
          duration: 150,
          headers: { authorization: `Bearer ${token}` },
        })
      : null;
    // Written every 250 ms by the server: the last file before the minute.
    await new Promise((r) => setTimeout(r, Math.max(0, minute - 300 - Date.now())));
    const before = readCounts(countsFile);
    const dbBefore = await backendsNs(store);
    const fromUs = monotonicUs();
    let queuedMs: number | null = null;
    let c = await counts(store, moment);
    while (Date.now() < minute + 120_000) {
      c = await counts(store, moment);
      if (c.queued >= STAYS && c.done >= STAYS) {
        queuedMs = new Date(String(c.last instanceof Date ? c.last.toISOString() : c.last)).getTime() - minute;
        break;
      }
      await new Promise((r) => setTimeout(r, 250));
    }
    await new Promise((r) => setTimeout(r, 500));
    const end = readCounts(countsFile);
    const dbEnd = await backendsNs(store);
    profiled = { window: { fromUs, toUs: monotonicUs() }, steps: c.done };
    // Reads go on half a second more, then stop.
    await new Promise((r) => setTimeout(r, 500));
    reading?.stop();
    const result = reading === null ? null : await reading;
    let perStep: Figures['perStep'] = null;
    if (before !== null && end !== null && c.done > 0) {
      const byText = Object.entries(end.byText)
        .map(([text, n]) => [text, (n - (before.byText[text] ?? 0)) / c.done] as [string, number])
        .filter(([, n]) => n >= 0.01)
        .sort((a, b) => b[1] - a[1]);
      perStep = {
        statements: (end.statements - before.statements) / c.done,
        roundTrips: (end.roundTrips - before.roundTrips) / c.done,
        cpuMs: (end.cpuUs - before.cpuUs) / 1000 / c.done,
        dbCpuMs:
          dbEnd === null
            ? null
            : [...dbEnd].reduce((sum, [pid, ns]) => sum + ns - (dbBefore?.get(pid) ?? 0), 0) / 1e6 / c.done,
        byText,
      };
    }
    const dup = await store.db
      .selectFrom('messages')
      .where('sender_type', '=', 'system')
      .groupBy('conversation_id')
      .having((eb) => eb.fn.countAll(), '>', 1)
      .select('conversation_id')
      .execute();
    return {
      store: kind,
      setupS,
      replanS,
      queuedMs,
      queued: c.queued,
      duplicates: dup.length,
      done: c.done,
      p50: result?.latency.p50 ?? Number.NaN,
      p99: result?.latency.p99 ?? Number.NaN,
      requests: result?.latency.totalCount ?? 0,
      non2xx: result?.non2xx ?? 0,
      perStep,
    };
  } finally {
    await store?.close();
    await stopChild(server);
    if (PROFILE && profiled !== null) {
      // Written by the server as it exits; "µs/req" below is per step done.
      const file = readdirSync(profileDir).find((f) => f.endsWith('.cpuprofile'));
      if (file !== undefined) {
        const kept = join(tmpdir(), `gma-bench-journeys-${kind}-${Date.now()}.cpuprofile`);
        copyFileSync(join(profileDir, file), kept);
        say(formatProfile(await summariseProfile(kept, profiled.window, 40), profiled.steps));
      }
    }
    await dropDb?.();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main() {
  const stores = (['sqlite', 'postgres'] as const).filter((s) => ONLY === undefined || ONLY === s);
  say(
    `journeys burst: ${STAYS} stays, one arrival step each due in the same minute (sms, dry run)` +
      (SOCKET === null ? '' : `; the server on PostgreSQL's Unix socket in ${SOCKET}`),
  );
  let missed = false;
  for (const kind of stores) {
    const f = await runStore(kind);
    const ok =
      f.queuedMs !== null && f.queuedMs <= TARGET_QUEUED_MS && f.duplicates === 0 && (!READS || f.p99 <= TARGET_P99_MS);
    missed ||= !ok;
    say(
      `  ${f.store.padEnd(8)} set-up ${f.setupS.toFixed(0)} s, replan of every stay ${f.replanS.toFixed(1)} s; ` +
        `all ${f.queued}/${STAYS} queued ${f.queuedMs === null ? 'NOT within 120 s' : `${(f.queuedMs / 1000).toFixed(1)} s after the minute`} ` +
        `(steps done ${f.done}, conversations with 2+ system messages ${f.duplicates}); ` +
        `GET /conversations during it: p50 ${f.p50} ms, p99 ${f.p99} ms over ${f.requests} requests (non-2xx ${f.non2xx}) ` +
        `${ok ? 'OK' : 'MISSED'} (targets: ${TARGET_QUEUED_MS / 1000} s, once, p99 <= ${TARGET_P99_MS} ms)`,
    );
    const p = f.perStep;
    if (p !== null) {
      say(
        `           per step over the burst${READS ? ' (the reads included)' : ''}: ${p.statements.toFixed(1)} statements ` +
          `in ${p.roundTrips.toFixed(1)} round trips, ${p.cpuMs.toFixed(2)} ms of the server's CPU` +
          (p.dbCpuMs === null ? '' : `, ${p.dbCpuMs.toFixed(2)} ms of PostgreSQL's (its backends on this database)`),
      );
      if (SHOW_STATEMENTS) for (const [text, n] of p.byText) say(`             ${n.toFixed(2).padStart(6)}  ${text}`);
    }
  }
  process.exitCode = missed ? 1 : 0;
}

await main();
