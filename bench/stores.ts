// Owns the throw-away stores a benchmark runs on: a temp SQLite file or a randomly named
// PostgreSQL database (plus a Redis key prefix), seeded with the demo-data command, and removed after.
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { copyFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import { Redis } from 'ioredis';
import pg from 'pg';
import type { BenchOptions, DataSize, StoreKind } from './options.js';
import { onCleanup, runNode } from './proc.js';

export interface BenchStore {
  kind: StoreKind;
  /** DATABASE_URL for the seed command and the server. */
  databaseUrl: string;
  /** Set for PostgreSQL runs: rate-limit counters shared through Redis, as a deployment would. */
  redisUrl: string | null;
  redisKeyPrefix: string;
  /** The PostgreSQL database's name, whose server processes the sampler counts as the store. */
  pgDatabase: string | null;
  /** After seeding: bring the store to the state a database in service is in. */
  settle(): Promise<void>;
  /** Undoes the store now (the same step also runs at exit if the run is interrupted first). */
  drop(): Promise<void>;
  /** Already seeded (--sqlite-file, --pg-database): no seed command runs. */
  seeded: boolean;
}

export interface SeedResult {
  seconds: number;
  adminEmail: string;
  adminPassword: string;
  summary: string;
}

const quoteIdent = (name: string) => `"${name.replace(/"/g, '""')}"`;

function withDatabase(baseUrl: string, db: string): string {
  const url = new URL(baseUrl);
  url.pathname = `/${db}`;
  return url.toString();
}

async function adminQuery(baseUrl: string, text: string, database = 'postgres'): Promise<void> {
  const client = new pg.Client({ connectionString: withDatabase(baseUrl, database), connectionTimeoutMillis: 5000 });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}

/** Deletes the run's rate-limit keys; they would expire within a window anyway, but a shared Redis stays tidy. */
async function dropRedisKeys(redisUrl: string, prefix: string): Promise<void> {
  const redis = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1, connectTimeout: 2000 });
  try {
    await redis.connect();
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      if (keys.length > 0) await redis.del(...keys);
      cursor = next;
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}

export async function createStore(
  kind: StoreKind,
  opts: Pick<BenchOptions, 'pgBaseUrl' | 'redisUrl'>,
  tmpDir: string,
): Promise<BenchStore> {
  const tag = `bench_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
  if (kind === 'sqlite') {
    const file = join(tmpDir, `${tag}.db`);
    const files = [file, `${file}-wal`, `${file}-shm`];
    let dropped = false;
    const drop = async () => {
      if (dropped) return;
      dropped = true;
      await Promise.all(files.map((f) => rm(f, { force: true })));
    };
    onCleanup(`remove ${file}`, drop, () => {
      for (const f of files) rmSync(f, { force: true });
    });
    // SQLite is measured as the app leaves it: nothing runs ANALYZE on it in service either.
    return {
      kind,
      databaseUrl: `sqlite:${file}`,
      redisUrl: null,
      redisKeyPrefix: 'gma:',
      pgDatabase: null,
      settle: async () => {},
      drop,
      seeded: false,
    };
  }

  await adminQuery(opts.pgBaseUrl, `create database ${quoteIdent(tag)}`);
  const prefix = `${tag}:`;
  let dropped = false;
  const drop = async () => {
    if (dropped) return;
    dropped = true;
    // FORCE ends any connection a killed server may have left behind (PostgreSQL 13+).
    await adminQuery(opts.pgBaseUrl, `drop database if exists ${quoteIdent(tag)} with (force)`);
    await dropRedisKeys(opts.redisUrl, prefix).catch(() => {});
  };
  onCleanup(`drop database ${tag}`, drop);
  return {
    kind,
    // A bulk-loaded table has no planner statistics and no visibility map until (auto)vacuum has
    // run, so counts read the heap; a database in service has had both. autovacuum may be off on a
    // test server, so do it here, once, before measuring.
    settle: () => adminQuery(opts.pgBaseUrl, 'vacuum analyze', tag),
    databaseUrl: withDatabase(opts.pgBaseUrl, tag),
    redisUrl: opts.redisUrl,
    redisKeyPrefix: prefix,
    pgDatabase: tag,
    drop,
    seeded: false,
  };
}

/**
 * A store seeded before the run: a copy of a SQLite file (removed after), or a PostgreSQL database
 * used in place and kept (the hot conversation and the mix's writes stay in it).
 */
export async function adoptStore(kind: StoreKind, opts: BenchOptions, tmpDir: string): Promise<BenchStore> {
  if (kind === 'sqlite') {
    const store = await createStore(kind, opts, tmpDir);
    await copyFile(opts.sqliteFile!, store.databaseUrl.slice('sqlite:'.length));
    return { ...store, seeded: true };
  }
  const db = opts.pgDatabase!;
  return {
    kind,
    databaseUrl: withDatabase(opts.pgBaseUrl, db),
    redisUrl: opts.redisUrl,
    redisKeyPrefix: `${db}_${randomBytes(4).toString('hex')}:`,
    pgDatabase: db,
    settle: () => adminQuery(opts.pgBaseUrl, 'vacuum analyze', db),
    drop: () => dropRedisKeys(opts.redisUrl, `${db}_`).catch(() => {}),
    seeded: true,
  };
}

/** The size of a seeded store, counted. */
export async function storeSize(store: BenchStore): Promise<DataSize> {
  const tables = ['guests', 'conversations', 'messages', 'tasks', 'knowledge_entries'] as const;
  const counts: number[] = [];
  if (store.kind === 'sqlite') {
    const db = new SQLite(store.databaseUrl.slice('sqlite:'.length), { readonly: true });
    try {
      for (const t of tables)
        counts.push(Number((db.prepare(`select count(*) as n from ${t}`).get() as { n: number }).n));
    } finally {
      db.close();
    }
  } else {
    const client = new pg.Client({ connectionString: store.databaseUrl });
    await client.connect();
    try {
      for (const t of tables) counts.push(Number((await client.query(`select count(*) as n from ${t}`)).rows[0].n));
    } finally {
      await client.end();
    }
  }
  const [guests, conversations, messages, tasks, knowledge] = counts as [number, number, number, number, number];
  const label =
    conversations >= 1_000_000 ? `${+(conversations / 1_000_000).toFixed(1)}M` : `${Math.round(conversations / 1000)}k`;
  return { label, guests, conversations, messages, tasks, knowledge };
}

/** Fills the store with the demo-data command, exactly as a user would, and reads the admin login it prints. */
export async function seedStore(store: BenchStore, size: DataSize, cwd: string, logPath: string): Promise<SeedResult> {
  const env: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: store.databaseUrl, NODE_ENV: 'development' };
  delete env.ADMIN_EMAIL;
  delete env.ADMIN_PASSWORD;
  const args = [
    '--import',
    'tsx',
    'src/cli/index.ts',
    'seed',
    '--guests',
    String(size.guests),
    '--conversations',
    String(size.conversations),
    '--messages',
    String(size.messages),
    '--tasks',
    String(size.tasks),
    '--knowledge',
    String(size.knowledge),
  ];
  const started = performance.now();
  const out = await runNode(args, env, logPath, cwd);
  const seconds = (performance.now() - started) / 1000;
  // The login table's admin row: "  admin    admin@demo.hotel    demo-password-2026    -".
  const m = /^\s*admin\s+(\S+@\S+)\s+(\S+)/m.exec(out);
  if (m === null) throw new Error(`the seed command printed no admin login:\n${out.slice(-1500)}`);
  return { seconds, adminEmail: m[1]!, adminPassword: m[2]!, summary: out };
}
