// Owns the per-layer A/B figures of issue 39: the app built in this process on a fresh SQLite file
// (or PostgreSQL + Redis with --pg), then each request of the four the issue names timed as server
// CPU per request (process.cpuUsage over `app.inject`, one at a time), each with and without one
// layer changed: the page cache off (PAGE_CACHE=false: every list read fresh), metrics
// (METRICS_TOKEN), CORS (CORS_ORIGINS, with and without an Origin header), an Idempotency-Key, an
// If-Match. The variants of one request are interleaved round by
// round and the median of the rounds is kept, so a loaded machine slows them alike; the
// difference to the plain request is the layer's cost. The list is also timed against its floor
// (its own statement in a bare Fastify app in this process, as the bench's floor is built).
// Injected requests skip the socket, so these are the app's own costs, without Node's HTTP
// parsing and writing.
//
//   node --import tsx bench/layers.ts [--pg] [--rounds N] [--requests N]
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import Fastify, { type FastifyInstance, type InjectOptions } from 'fastify';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { hashPassword } from '../src/lib/password.js';
import { insertStaff } from '../src/modules/staff/repository.js';

const { values } = parseArgs({
  options: {
    pg: { type: 'boolean', default: false },
    rounds: { type: 'string', default: '5' },
    requests: { type: 'string', default: '300' },
    'pg-url': { type: 'string', default: 'postgres://postgres@127.0.0.1:5432/test' },
    'redis-url': { type: 'string', default: 'redis://127.0.0.1:6379' },
  },
});
const ROUNDS = Number(values.rounds);
const PER_ROUND = Number(values.requests);
const GUESTS = 40;
const WARMUP = 300;
const ORIGIN = 'https://dashboard.example';
const METRICS_TOKEN = 'bench-metrics-token-0123456789';

const dir = mkdtempSync(join(tmpdir(), 'bench-layers-'));
const schema = `bench_layers_${randomBytes(4).toString('hex')}`;

async function pgDatabase(): Promise<string> {
  const { default: pg } = await import('pg');
  const admin = new pg.Client({ connectionString: values['pg-url'] });
  await admin.connect();
  await admin.query(`create database ${schema}`);
  await admin.end();
  const url = new URL(values['pg-url']!);
  url.pathname = `/${schema}`;
  return url.toString();
}

async function dropPg(): Promise<void> {
  const { default: pg } = await import('pg');
  const admin = new pg.Client({ connectionString: values['pg-url'] });
  await admin.connect();
  await admin.query(`drop database if exists ${schema} with (force)`);
  await admin.end();
}

const databaseUrl = values.pg ? await pgDatabase() : `sqlite:${join(dir, 'layers.db')}`;

/** An app on the one store: plain, or with one layer turned on. */
async function app(extra: Record<string, string>): Promise<FastifyInstance> {
  const config = loadConfig({
    NODE_ENV: 'production',
    LOG_LEVEL: 'silent',
    JWT_SECRET: 'bench-layers-secret-that-is-long-enough-0123',
    DATABASE_URL: databaseUrl,
    RATE_LIMIT_STANDARD: '10000000',
    RATE_LIMIT_BULK: '10000000',
    CHANNELS_DRY_RUN: 'true',
    ...(values.pg && { REDIS_URL: values['redis-url']!, REDIS_KEY_PREFIX: `${schema}:` }),
    ...extra,
  });
  return buildApp(config);
}

const plain = await app({});

/**
 * The list's floor in this process (as bench/ceiling-server.ts builds it): the API's checked-in
 * first-page statement on the same store, its rows' JSON joined in the envelope, in a bare Fastify
 * app with no auth, hooks, cursor or schema. Timed beside the list, round by round.
 */
async function floorApp(): Promise<FastifyInstance> {
  const dialect = values.pg ? 'postgres' : 'sqlite';
  const lines = readFileSync(new URL(`../src/db/queries/${dialect}/conversations.sql`, import.meta.url), 'utf8').split(
    '\n',
  );
  const text = lines[lines.indexOf('-- {"status":"open"}: first') + 1]!.replace(/;$/, '');
  const inputs = () => {
    const now = new Date().toISOString();
    const today = now.slice(0, 10);
    return values.pg
      ? [today, now, now, now, now, 'open', 'open', 20, 0]
      : ['open', today, now, now, now, now, 'open', 20, 0, 0];
  };
  const answer = (rows: unknown[][]) =>
    `{"success":true,"data":[${rows.map((r) => r[0]).join(',')}],"meta":${JSON.stringify({
      limit: 20,
      page: 1,
      total: Number(rows[0]?.[rows[0].length - 1] ?? 0),
      pages: Math.ceil(Number(rows[0]?.[rows[0].length - 1] ?? 0) / 20),
    })}}`;
  const f = Fastify({ logger: false });
  if (values.pg) {
    const { default: pg } = await import('pg');
    const pool = new pg.Pool({ connectionString: databaseUrl, max: 2 });
    f.addHook('onClose', async () => pool.end());
    f.get('/floor', async (_req, reply) => {
      const { rows } = await pool.query<unknown[]>({ name: 'floor', text, values: inputs(), rowMode: 'array' });
      reply.type('application/json; charset=utf-8');
      return answer(rows);
    });
  } else {
    const { default: SQLite } = await import('better-sqlite3');
    const conn = new SQLite(databaseUrl.slice('sqlite:'.length), { readonly: true });
    f.addHook('onClose', async () => conn.close());
    const stmt = conn.prepare(text).raw(true);
    f.get('/floor', async (_req, reply) => {
      reply.type('application/json; charset=utf-8');
      return answer(stmt.all(inputs()) as unknown[][]);
    });
  }
  await f.ready();
  return f;
}
const fresh = await app({ PAGE_CACHE: 'false' });
const withMetrics = await app({ METRICS_TOKEN });
const withCors = await app({ CORS_ORIGINS: ORIGIN });

const staff = await insertStaff(plain.ctx.store, {
  name: 'Bench Admin',
  email: `bench.${randomBytes(3).toString('hex')}@hotel.test`,
  role: 'admin',
  department: null,
  passwordHash: await hashPassword('bench-password-0123'),
});
const token = plain.ctx.tokens.sign(staff.id, 'admin').token;
const auth = { authorization: `Bearer ${token}` };

async function must(a: FastifyInstance, o: InjectOptions): Promise<Record<string, unknown>> {
  const r = await a.inject(o);
  if (r.statusCode >= 300) throw new Error(`${o.method} ${o.url}: ${r.statusCode} ${r.body}`);
  return r.json();
}

const guests: string[] = [];
const conversations: string[] = [];
for (let i = 0; i < GUESTS; i++) {
  const g = (await must(plain, {
    method: 'POST',
    url: '/api/v1/guests',
    headers: auth,
    payload: { name: `Guest ${i} Bench`, email: `guest${i}@bench.test` },
  })) as { data: { id: string } };
  guests.push(g.data.id);
  const c = (await must(plain, {
    method: 'POST',
    url: '/api/v1/conversations',
    headers: auth,
    payload: { guestId: g.data.id, channel: 'web', subject: 'Bench', content: 'Welcome' },
  })) as { data: { id: string } };
  conversations.push(c.data.id);
}

let n = 0;
const next = <T>(list: T[]): T => list[n++ % list.length]!;
const etagOf = async (a: FastifyInstance, url: string): Promise<string> =>
  String((await a.inject({ method: 'GET', url, headers: auth })).headers.etag);

interface Variant {
  label: string;
  app: FastifyInstance;
  request: () => Promise<InjectOptions>;
}
type Case = { name: string; variants: Variant[] };

const list = (a: FastifyInstance, label: string, headers: Record<string, string> = {}): Variant => ({
  label,
  app: a,
  request: async () => ({
    method: 'GET',
    url: '/api/v1/conversations?status=open&limit=20',
    headers: { ...auth, ...headers },
  }),
});
const me = (a: FastifyInstance, label: string, headers: Record<string, string> = {}): Variant => ({
  label,
  app: a,
  request: async () => ({ method: 'GET', url: '/api/v1/auth/me', headers: { ...auth, ...headers } }),
});
const post = (a: FastifyInstance, label: string, key = false): Variant => ({
  label,
  app: a,
  request: async () => ({
    method: 'POST',
    url: `/api/v1/conversations/${next(conversations)}/messages`,
    headers: { ...auth, ...(key && { 'idempotency-key': randomBytes(12).toString('hex') }) },
    payload: { content: 'Benchmark: your room is ready, enjoy your stay.' },
  }),
});
const patch = (a: FastifyInstance, label: string, ifMatch = false): Variant => ({
  label,
  app: a,
  request: async () => {
    const id = next(guests);
    const url = `/api/v1/guests/${id}`;
    return {
      method: 'PATCH',
      url,
      headers: { ...auth, ...(ifMatch && { 'if-match': await etagOf(a, url) }) },
      payload: { notes: `Benchmark ${n}` },
    };
  },
});

/**
 * The conversation lists of the realistic mix (bench/mix.ts: a random filter of five, a shallow
 * page, `limit` 20 or 50), with a write (a conversation's status, untimed) before every fifth:
 * a page is rarely asked twice between writes, so the page cache mostly misses; what each miss
 * costs it shows against PAGE_CACHE=false.
 */
const MIX_FILTERS = ['', 'status=open', 'status=pending', 'channel=whatsapp', 'status=open&channel=email'];
let mixN = 0;
const mixList = (a: FastifyInstance, label: string): Variant => ({
  label,
  app: a,
  request: async () => {
    mixN++;
    if (mixN % 5 === 0) {
      await must(a, {
        method: 'PATCH',
        url: `/api/v1/conversations/${next(conversations)}`,
        headers: auth,
        payload: { status: mixN % 2 ? 'open' : 'pending' },
      });
    }
    const filter = MIX_FILTERS[mixN % MIX_FILTERS.length]!;
    const q = `${filter}${filter === '' ? '' : '&'}limit=${mixN % 3 ? 20 : 50}&page=${1 + (mixN % 2)}`;
    return { method: 'GET', url: `/api/v1/conversations?${q}`, headers: auth };
  },
});

const floor = await floorApp();
const cases: Case[] = [
  {
    name: 'GET /conversations?status=open&limit=20',
    variants: [
      list(plain, 'plain (repeated: answered from the page cache)'),
      list(fresh, 'every read fresh (PAGE_CACHE=false)'),
      {
        label: "its floor: the page's statement in bare Fastify (src/db/queries), no auth",
        app: floor,
        request: async () => ({ method: 'GET', url: '/floor' }),
      },
      list(withMetrics, 'with metrics (METRICS_TOKEN)'),
      list(withCors, 'CORS on, no Origin header'),
      list(withCors, 'CORS on, with an Origin header', { origin: ORIGIN }),
    ],
  },
  {
    name: "the mix's conversation lists, a write before every fifth (untimed)",
    variants: [mixList(plain, 'plain (page cache on)'), mixList(fresh, 'PAGE_CACHE=false')],
  },
  {
    name: 'GET /auth/me',
    variants: [
      me(plain, 'plain'),
      me(withMetrics, 'with metrics (METRICS_TOKEN)'),
      me(withCors, 'CORS on, no Origin header'),
      me(withCors, 'CORS on, with an Origin header', { origin: ORIGIN }),
    ],
  },
  {
    name: 'POST /conversations/:id/messages',
    variants: [post(plain, 'plain'), post(plain, 'with an Idempotency-Key', true)],
  },
  {
    name: 'PATCH /guests/:id',
    // If-Match's own GET (for the ETag) is not timed: it runs before the clock starts.
    variants: [patch(plain, 'plain'), patch(plain, 'with If-Match', true)],
  },
];

/** Server CPU per request (µs), `count` requests one at a time; building each request is untimed. */
async function measure(v: Variant, count: number): Promise<number> {
  let used = 0;
  for (let i = 0; i < count; i++) {
    const r = await v.request();
    const before = process.cpuUsage();
    const res = await v.app.inject(r);
    const spent = process.cpuUsage(before);
    used += spent.user + spent.system;
    if (res.statusCode >= 300) throw new Error(`${v.label}: ${res.statusCode} ${res.body}`);
  }
  return used / count;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

console.log(
  `bench/layers.ts: ${values.pg ? 'PostgreSQL + Redis' : 'SQLite (WAL, synchronous as configured)'}; ` +
    `${ROUNDS} rounds × ${PER_ROUND} requests per variant, interleaved; server CPU µs per request (median of rounds)`,
);
try {
  for (const c of cases) {
    // The apps with a layer on are closed before the writes: their pollers would read each write.
    if (c.name.startsWith('POST')) {
      await fresh.close();
      await withCors.close();
      await withMetrics.close();
    }
    for (const v of c.variants) await measure(v, WARMUP);
    const times = c.variants.map(() => [] as number[]);
    for (let r = 0; r < ROUNDS; r++) {
      for (const [i, v] of c.variants.entries()) times[i]!.push(await measure(v, PER_ROUND));
    }
    const base = median(times[0]!);
    console.log(`\n${c.name}`);
    for (const [i, v] of c.variants.entries()) {
      const m = median(times[i]!);
      const delta = i === 0 ? '' : `  (${m - base >= 0 ? '+' : ''}${(m - base).toFixed(1)})`;
      console.log(`  ${m.toFixed(1).padStart(8)} µs${delta.padEnd(12)}  ${v.label}`);
    }
  }
} finally {
  await fresh.close();
  await withCors.close();
  await withMetrics.close();
  await plain.close();
  await floor.close();
  rmSync(dir, { recursive: true, force: true });
  if (values.pg) await dropPg();
}
