// Builds an app on a fresh store for a test: in-memory SQLite by default, or, with
// TEST_STORE=postgres, a new randomly named PostgreSQL database and Redis (REDIS_URL or local).
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import type { TestContext } from 'node:test';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { sql } from 'kysely';
import { type BuildOptions, buildApp, loggerOptions } from '../src/app.js';
import { type Config, loadConfig } from '../src/config.js';
import { migrate } from '../src/db/migrate.js';
import { openStore, type Store } from '../src/db/store.js';
import type { Role } from '../src/lib/auth.js';
import { hashPassword } from '../src/lib/password.js';
import { insertStaff } from '../src/modules/staff/repository.js';
import { freshPostgres } from './pg-databases.js';
import { checkResponse } from './response-validation.js';
import { nodeArgs, ROOT } from './root.js';

export { freshPostgres };

export const TEST_STORE = process.env.TEST_STORE === 'postgres' ? 'postgres' : 'sqlite';
const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
export const JWT_SECRET = 'test-secret-that-is-long-enough-0123456789';
/** Every staff member made by `createStaff` has this password. */
export const PASSWORD = 'correct horse battery staple';

/**
 * A migrated SQLite database's bytes, made once per test process: each in-memory store a test app
 * opens starts from a copy (`sqliteImage`) instead of running every migration again.
 */
let sqliteImage: Promise<Buffer> | undefined;
function migratedSqliteImage(): Promise<Buffer> {
  sqliteImage ??= (async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gma-image-'));
    const store = openStore({ kind: 'sqlite', path: ':memory:' });
    try {
      await migrate(store);
      await sql`vacuum into ${sql.lit(join(dir, 'migrated.db'))}`.execute(store.db);
      return readFileSync(join(dir, 'migrated.db'));
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  })();
  return sqliteImage;
}

/**
 * A DATABASE_URL for a fresh, empty store of the kind under test: a new PostgreSQL database, or a
 * SQLite file in a temporary folder; removed when the test ends. For tests that run the CLI or
 * the server as a child process.
 */
export async function freshDatabaseUrl(t: TestContext): Promise<string> {
  if (TEST_STORE === 'postgres') return freshPostgres(t);
  const dir = mkdtempSync(join(tmpdir(), 'gma-test-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return `sqlite:${join(dir, 'test.db')}`;
}

/**
 * REDIS_URL and a key prefix of its own for a PostgreSQL run (SQLite runs count in process), so
 * concurrent tests sharing the one Redis never share counters or event channels.
 */
export function redisEnv(): Record<string, string> {
  if (TEST_STORE !== 'postgres') return {};
  return { REDIS_URL, REDIS_KEY_PREFIX: `gma-test:${randomBytes(6).toString('hex')}:` };
}

export interface TestApp {
  app: FastifyInstance;
  config: Config;
}

/**
 * An app on a fresh store; closed (and its database dropped) when the test ends. `options` are
 * buildApp's own: internal settings no environment variable reaches, or parts of the app a test
 * replaces (a slow resolver).
 */
export async function buildTestApp(
  t: TestContext,
  env: Record<string, string> = {},
  options: Omit<BuildOptions, 'store'> = {},
): Promise<FastifyInstance> {
  // Registered before the database is created: node:test runs after-hooks in registration order,
  // and the app (with its background pollers) must close before its database is dropped.
  let built: FastifyInstance | undefined;
  t.after(() => built?.close());
  const base: Record<string, string> = {
    NODE_ENV: 'test',
    LOG_LEVEL: 'silent',
    JWT_SECRET,
    DATABASE_URL: 'sqlite::memory:',
    // Each test uses a few routes of the app it builds (src/lib/compiled-schemas.ts).
    SCHEMA_COMPILE: 'lazy',
  };
  if (TEST_STORE === 'postgres' && env.DATABASE_URL === undefined) {
    base.DATABASE_URL = await freshPostgres(t, { migrated: true });
  }
  const config = loadConfig({ ...base, ...redisEnv(), ...env });
  built = await buildApp(config, { ...options, ...(await migratedMemoryStore(t, config)) });
  return built;
}

/**
 * For an in-memory SQLite config, a store opened from the migrated image (closed after the app,
 * whose after-hook is registered first); otherwise nothing, and the app opens and migrates its own.
 */
async function migratedMemoryStore(t: TestContext, config: Config): Promise<{ store?: Store }> {
  if (config.store.kind !== 'sqlite' || config.store.path !== ':memory:') return {};
  const store = openStore(config.store, {
    sqliteSynchronous: config.sqliteSynchronous,
    sqliteImage: await migratedSqliteImage(),
  });
  t.after(() => store.close());
  return { store };
}

/** A line the app logged, parsed. */
export interface LogLine {
  level: number;
  msg?: string;
  reqId?: string;
  [key: string]: unknown;
}

/**
 * An app logging at `level` into `lines` (parsed JSON lines) instead of stdout, on in-memory
 * SQLite unless `env` names another store; closed when the test ends.
 */
export async function appWithLog(t: TestContext, level: string, env: Record<string, string> = {}) {
  const lines: LogLine[] = [];
  const stream = new Writable({
    write(chunk, _encoding, cb) {
      for (const text of String(chunk).split('\n')) if (text !== '') lines.push(JSON.parse(text) as LogLine);
      cb();
    },
  });
  const config = loadConfig({
    NODE_ENV: 'test',
    LOG_LEVEL: level,
    JWT_SECRET,
    DATABASE_URL: 'sqlite::memory:',
    // Each test uses a few routes of the app it builds (src/lib/compiled-schemas.ts).
    SCHEMA_COMPILE: 'lazy',
    ...env,
  });
  // The app's after-hook first: it must close before the store it was given.
  let built: FastifyInstance | undefined;
  t.after(() => built?.close());
  const app = await buildApp(config, {
    logger: { ...(loggerOptions(config) as object), stream },
    ...(await migratedMemoryStore(t, config)),
  });
  built = app;
  return { app, lines };
}

let passwordHash: Promise<string> | undefined;

export interface TestUser {
  id: string;
  email: string;
  role: Role;
  token: string;
}

let counter = 0;

/** Inserts a staff member with PASSWORD (or `over.password`) and returns a signed token for them. */
export async function createStaff(
  app: FastifyInstance,
  role: Role,
  over: { name?: string; email?: string; department?: string | null; password?: string } = {},
): Promise<TestUser> {
  passwordHash ??= hashPassword(PASSWORD);
  counter++;
  const email = over.email ?? `${role}${counter}.${randomBytes(3).toString('hex')}@hotel.test`;
  const staff = await insertStaff(app.ctx.store, {
    name: over.name ?? `${role[0]!.toUpperCase()}${role.slice(1)} ${counter}`,
    email,
    role,
    department: over.department ?? null,
    passwordHash: over.password === undefined ? await passwordHash : await hashPassword(over.password),
  });
  const { token } = app.ctx.tokens.sign(staff.id, role);
  return { id: staff.id, email, role, token };
}

export interface Res {
  status: number;
  headers: LightMyRequestResponse['headers'];
  // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary JSON bodies.
  body: any;
  raw: LightMyRequestResponse;
  // biome-ignore lint/suspicious/noExplicitAny: the `data` member of the body, for brevity.
  data: any;
  /** How long the app took to answer, in ms (the check against the document not included). */
  ms: number;
}

/** Sends a request; `token` adds the bearer header; a body is sent as JSON. */
export async function call(
  app: FastifyInstance,
  method: InjectOptions['method'],
  url: string,
  opts: { token?: string; body?: unknown; headers?: Record<string, string> } = {},
): Promise<Res> {
  // A string or a Buffer is sent as it is; anything else as its JSON.
  const headers: Record<string, string> = { ...(opts.headers ?? {}) };
  if (opts.token !== undefined) headers.authorization = `Bearer ${opts.token}`;
  // Paths are relative to /api/v1 unless they name a root path themselves.
  const full = /^\/(api|healthz|readyz|docs|metrics|favicon\.ico|favicon\.svg)(\/|\?|$)/.test(url)
    ? url
    : `/api/v1${url}`;
  const injectOpts: InjectOptions = { method, url: full, headers };
  if (opts.body !== undefined) {
    injectOpts.payload =
      typeof opts.body === 'string' || Buffer.isBuffer(opts.body) ? opts.body : JSON.stringify(opts.body);
    headers['content-type'] ??= 'application/json';
  }
  const at = performance.now();
  const raw = await app.inject(injectOpts);
  const ms = performance.now() - at;
  await checkResponse(app, String(method), full, raw);
  let body: unknown;
  try {
    body = raw.body === '' ? undefined : JSON.parse(raw.body);
  } catch {
    body = raw.body;
  }
  return {
    status: raw.statusCode,
    headers: raw.headers,
    body,
    raw,
    data: (body as { data?: unknown } | undefined)?.data,
    ms,
  };
}

export interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs `node <script> ...args` (root.ts nodeArgs) from the repository root with only `env` (plus PATH),
 * for tests of the server and CLI as real processes; rejects if it has not exited in `timeoutMs`.
 */
export function runNode(script: string, args: string[], env: Record<string, string>, timeoutMs = 60_000): Promise<Run> {
  const p = spawnNode(script, args, { PATH: process.env.PATH ?? '', ...env });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      p.child.kill('SIGKILL');
      reject(
        new Error(`${script} ${args.join(' ')} did not exit within ${timeoutMs} ms\n${p.stdout()}\n${p.stderr()}`),
      );
    }, timeoutMs);
    p.child.on('error', reject);
    p.exited.then(({ code, signal }) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout: p.stdout(), stderr: p.stderr() });
    });
  });
}

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** Date.now() when it exited. */
  at: number;
}

export interface NodeProcess {
  child: ChildProcess;
  /** Everything it wrote so far. */
  stdout(): string;
  stderr(): string;
  /** Resolves with how the process ended. */
  exited: Promise<Exit>;
  /** How it ended, or null while it runs. */
  exit(): Exit | null;
}

/** Starts `node <script> ...args` (root.ts nodeArgs) from the repository root with exactly `env`, output kept. */
export function spawnNode(script: string, args: string[], env: Record<string, string>): NodeProcess {
  const child = spawn(process.execPath, [...nodeArgs(script), ...args], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => {
    stdout += d;
  });
  child.stderr.on('data', (d) => {
    stderr += d;
  });
  let exit: Exit | null = null;
  const exited = new Promise<Exit>((resolve) =>
    child.on('close', (code, signal) => {
      exit = { code, signal, at: Date.now() };
      resolve(exit);
    }),
  );
  return { child, stdout: () => stdout, stderr: () => stderr, exited, exit: () => exit };
}

/**
 * Each limit from 1 to 6, page 1 and page 2 of `path` (a list URL with or without a query) hold
 * `ids` (the whole list, in order) sliced accordingly, with `meta.total` right. More limits than
 * get a first-page statement of their own (src/db/prepared.ts), so both kinds of statement answer.
 */
export async function assertPagesAgree(
  app: FastifyInstance,
  token: string,
  path: string,
  ids: string[],
  idOf: (item: never) => string = (item: { id: string }) => item.id,
): Promise<void> {
  const sep = path.includes('?') ? '&' : '?';
  for (let limit = 1; limit <= 6; limit++) {
    for (const page of [1, 2]) {
      const res = await call(app, 'GET', `${path}${sep}page=${page}&limit=${limit}`, { token });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.deepEqual(
        (res.data as never[]).map(idOf),
        ids.slice((page - 1) * limit, page * limit),
        `page ${page}, limit ${limit}`,
      );
      assert.equal(res.body.meta.total, ids.length);
    }
  }
}

/**
 * A message once `done` holds for it, read through GET /conversations/:id/messages/:messageId.
 * Channel delivery settles a text after commit, in the background: this waits for that outcome
 * (by default: no longer queued) and fails the test if it never comes.
 */
export async function settledMessage(
  app: FastifyInstance,
  token: string,
  conversationId: string,
  messageId: string,
  done: (m: { deliveryStatus: string }) => boolean = (m) => m.deliveryStatus !== 'queued',
  // biome-ignore lint/suspicious/noExplicitAny: the API's JSON, asserted on by the caller.
): Promise<any> {
  let last: unknown;
  for (let i = 0; i < 1000; i++) {
    const res = await call(app, 'GET', `/conversations/${conversationId}/messages/${messageId}`, { token });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    last = res.data;
    if (done(res.data)) return res.data;
    await new Promise((r) => setTimeout(r, 10));
  }
  assert.fail(`message ${messageId} never settled; last seen ${JSON.stringify(last)}`);
}
