// Shared by the reliability tests: the real server as a child process on a free port, and
// private PostgreSQL and Redis instances that a test may stop and start. The machine's shared
// PostgreSQL (5432) and Redis (6379) are never touched: other people's tests run against them.
import assert from 'node:assert/strict';
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chmodSync, chownSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { type Exit, JWT_SECRET, redisEnv, spawnNode } from '../helpers.js';

export const ADMIN_EMAIL = 'owner@hotel.test';
export const ADMIN_PASSWORD = 'the first admin password';

/** A port nothing listens on right now: let the OS pick one, then release it. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const address = srv.address();
      srv.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

export interface Server {
  base: string;
  port: number;
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Resolves with how the process ended. */
  exited: Promise<Exit>;
  hasExited(): boolean;
}

/** The environment every spawned server gets: the store under test, Redis for PostgreSQL runs. */
export function serverEnv(databaseUrl: string, extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {
    DATABASE_URL: databaseUrl,
    JWT_SECRET,
    LOG_LEVEL: 'warn',
    ADMIN_EMAIL,
    ADMIN_PASSWORD,
    SQLITE_SYNCHRONOUS: 'FULL',
    RATE_LIMIT_STANDARD: '10000000',
    RATE_LIMIT_BULK: '10000000',
    LOGIN_RATE_LIMIT: '10000000',
  };
  return { ...env, ...redisEnv(), ...extra };
}

/** Starts src/server.ts (compiled when the tests are; on `fixedPort`, else a free one); resolves once /healthz answers. */
export async function startServer(
  t: TestContext,
  env: Record<string, string>,
  timeoutMs = 60_000,
  fixedPort?: number,
): Promise<Server> {
  const port = fixedPort ?? (await freePort());
  const p = spawnNode('src/server.ts', [], {
    PATH: process.env.PATH ?? '',
    HOST: '127.0.0.1',
    PORT: String(port),
    ...env,
  });
  const { child, stdout, stderr, exited } = p;
  const hasExited = () => p.exit() !== null;
  t.after(() => {
    if (!hasExited()) child.kill('SIGKILL');
  });
  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    assert.ok(!hasExited(), `the server exited during start-up:\n${stdout()}\n${stderr()}`);
    try {
      if ((await fetch(`${base}/healthz`)).status === 200) break;
    } catch {
      // not listening yet
    }
    assert.ok(Date.now() < deadline, `the server did not answer within ${timeoutMs} ms`);
    await sleep(50);
  }
  return { base, port, child, stdout, stderr, exited, hasExited };
}

/** Logs in as the first admin and returns the token. */
export async function adminToken(base: string): Promise<string> {
  const res = await fetch(`${base}/api/v1/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: ADMIN_EMAIL, password: ADMIN_PASSWORD }),
  });
  assert.equal(res.status, 200, await res.clone().text());
  return ((await res.json()) as { data: { token: string } }).data.token;
}

/** A small deterministic PRNG (mulberry32), so a seeded run is repeatable. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = Math.imul(a ^ (a >>> 15), 1 | a);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

const PG_BIN = '/usr/lib/postgresql/15/bin';

export interface PrivatePostgres {
  url: string;
  port: number;
  stop(): void;
  start(): void;
}

/**
 * A throw-away PostgreSQL cluster in a temporary folder on a free port, owned by the postgres
 * user (initdb refuses to run as root), with one database `gma`; removed when the test ends.
 */
export async function privatePostgres(t: TestContext): Promise<PrivatePostgres> {
  const dir = mkdtempSync(join(tmpdir(), 'gma-pg-'));
  chmodSync(dir, 0o755);
  const pgUid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim());
  const pgGid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim());
  chownSync(dir, pgUid, pgGid);
  const data = join(dir, 'data');
  const port = await freePort();
  const as = (cmd: string, args: string[]) =>
    execFileSync('runuser', ['-u', 'postgres', '--', join(PG_BIN, cmd), ...args], { stdio: 'pipe', cwd: dir });
  as('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8']);
  const opts = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off`;
  const start = () => as('pg_ctl', ['-D', data, '-o', opts, '-l', join(dir, 'log'), '-w', '-t', '30', 'start']);
  const stop = () => as('pg_ctl', ['-D', data, '-m', 'fast', '-w', '-t', '30', 'stop']);
  start();
  t.after(() => {
    try {
      stop();
    } catch {
      // already stopped
    }
    rmSync(dir, { recursive: true, force: true });
  });
  const admin = new pg.Client({ connectionString: `postgres://postgres@127.0.0.1:${port}/postgres` });
  await admin.connect();
  await admin.query('create database gma');
  await admin.end();
  return { url: `postgres://postgres@127.0.0.1:${port}/gma`, port, stop, start };
}

export interface PrivateRedis {
  url: string;
  port: number;
  stop(): Promise<void>;
  start(): Promise<void>;
}

/** A throw-away redis-server child on a free port, without persistence. */
export async function privateRedis(t: TestContext): Promise<PrivateRedis> {
  const port = await freePort();
  let child: ChildProcess | null = null;
  const start = async () => {
    child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
      stdio: 'ignore',
    });
    for (let i = 0; i < 100; i++) {
      try {
        execFileSync('redis-cli', ['-p', String(port), 'ping'], { stdio: 'pipe' });
        return;
      } catch {
        await sleep(50);
      }
    }
    throw new Error('private redis did not start');
  };
  const stop = async () => {
    const c = child;
    child = null;
    if (c === null) return;
    const gone = new Promise((resolve) => c.once('exit', resolve));
    c.kill('SIGKILL');
    await gone;
  };
  await start();
  t.after(stop);
  return { url: `redis://127.0.0.1:${port}`, port, stop, start };
}

/** The ids in a table of a store the server (now stopped or running) writes to. */
export function idsInStore(databaseUrl: string, table: 'guests' | 'messages'): Promise<Set<string>> {
  return columnInStore(databaseUrl, table, 'id');
}

/** The names of every guest in the store. */
export function namesInStore(databaseUrl: string): Promise<Set<string>> {
  return columnInStore(databaseUrl, 'guests', 'name');
}

async function columnInStore(databaseUrl: string, table: string, column: string): Promise<Set<string>> {
  return new Set(await columnValues(databaseUrl, table, column));
}

/** Every message's content, duplicates kept (a retry must not have stored one twice). */
export function messageContents(databaseUrl: string): Promise<string[]> {
  return columnValues(databaseUrl, 'messages', 'content');
}

async function columnValues(databaseUrl: string, table: string, column: string): Promise<string[]> {
  if (databaseUrl.startsWith('sqlite:')) {
    const { default: SQLite } = await import('better-sqlite3');
    const db = new SQLite(databaseUrl.slice('sqlite:'.length), { readonly: true });
    try {
      return (db.prepare(`select ${column} as v from ${table}`).all() as { v: string }[]).map((r) => r.v);
    } finally {
      db.close();
    }
  }
  const c = new pg.Client({ connectionString: databaseUrl });
  await c.connect();
  try {
    return (await c.query(`select ${column} as v from ${table}`)).rows.map((r: { v: string }) => r.v);
  } finally {
    await c.end();
  }
}

/** SQLite: `pragma integrity_check`; PostgreSQL: every table readable and every index valid. */
export async function integrityCheck(databaseUrl: string): Promise<string> {
  if (databaseUrl.startsWith('sqlite:')) {
    const { default: SQLite } = await import('better-sqlite3');
    const db = new SQLite(databaseUrl.slice('sqlite:'.length));
    try {
      return (db.pragma('integrity_check') as { integrity_check: string }[]).map((r) => r.integrity_check).join('; ');
    } finally {
      db.close();
    }
  }
  const c = new pg.Client({ connectionString: databaseUrl });
  await c.connect();
  try {
    const invalid = await c.query('select indexrelid::regclass::text as name from pg_index where not indisvalid');
    if (invalid.rows.length > 0) return `invalid indexes: ${invalid.rows.map((r) => r.name).join(', ')}`;
    // amcheck: every B-tree index is well formed and holds exactly the heap's rows.
    await c.query('create extension if not exists amcheck');
    const indexes = await c.query(
      `select i.indexrelid::regclass::text as name from pg_index i join pg_class c on c.oid = i.indexrelid
         join pg_am a on a.oid = c.relam join pg_namespace n on n.oid = c.relnamespace
        where a.amname = 'btree' and n.nspname = 'public'`,
    );
    for (const { name } of indexes.rows) await c.query('select bt_index_check($1::regclass, true)', [name]);
    return 'ok';
  } finally {
    await c.end();
  }
}
