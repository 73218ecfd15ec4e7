// Owns the connection to the store: one Kysely instance over better-sqlite3 or pg, chosen by
// config, with the few dialect differences (types returned, pragmas, pool) settled here so the
// rest of the code sees ISO timestamp strings, JSON text and numeric counts on both.
import { createHash } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import SQLite from 'better-sqlite3';
import {
  type Compilable,
  CompiledQuery,
  Kysely,
  PostgresDialect,
  type PostgresPool,
  type PostgresPoolClient,
  type SqliteDatabase,
  SqliteDialect,
  sql,
} from 'kysely';
import type pg from 'pg';
import type { StoreConfig } from '../config.js';
import { loadPg } from '../lib/optional-deps.js';
import { Signal } from '../lib/signal.js';
import type { EventsCommitted } from '../modules/events/committed.js';
import { registerHistogramFunctions } from '../modules/reports/histogram.js';
import { checkpointOffLoop } from './checkpointer.js';
import {
  addParts,
  type CommitTotal,
  type Executor,
  executor,
  type RunSql,
  type Tx,
  totalStatements,
  transaction,
} from './executor.js';
import { GroupCommitter } from './group-commit.js';
import { joining, joinRequestTx, requestTx } from './request-tx.js';
import type { Database, Db } from './types.js';

export type { DialectName } from './executor.js';

/**
 * The store: an executor for queries outside a transaction (src/db/executor.ts), the way to run a
 * transaction, and its few dialect differences settled here.
 */
export interface Store extends Executor {
  /** The Kysely instance itself, for migrations, seeding and tooling; requests run on the store. */
  readonly db: Db;
  /**
   * Runs `work` in one transaction and resolves once it is committed (durably: on SQLite grouped
   * with concurrent ones into one commit, src/db/group-commit.ts). A throw rolls it back. Inside
   * a request transaction (src/db/request-tx.ts), `work` runs in a savepoint of it instead.
   */
  transact<T>(work: (tx: Tx) => Promise<T>): Promise<T>;
  /** Told after each commit that wrote events (src/modules/events/outbox.ts). */
  readonly eventsCommitted: Signal<EventsCommitted>;
  /** The connection pool's use (PostgreSQL); null for SQLite's single connection. */
  poolUse(): { total: number; idle: number; waiting: number } | null;
  /**
   * Runs long work (migrations: a backfill or an index build on a large store) without the
   * request timeouts: on PostgreSQL on a connection of its own with no statement timeout; on
   * SQLite on the store's own connection, which has none.
   */
  maintenance<T>(work: (db: Db) => Promise<T>): Promise<T>;
  /** Resolves when the store answers a trivial query. */
  ping(): Promise<void>;
  /**
   * A value that changes whenever anything in the store may have changed (a write by this process
   * or a commit by any other), or null when the store cannot say cheaply (PostgreSQL) or a
   * transaction is open on the connection. Caches of rows (the gate's staff rows, API keys) key on it.
   */
  readVersion(): string | null;
  /**
   * A value that is the same for two reads only if both see the same committed data, on every
   * instance, or null when none can be given (a transaction open on the connection, or a request
   * transaction). SQLite: readVersion(), at once. PostgreSQL: the current snapshot
   * (`pg_current_snapshot()`, xmin:xmax:in-progress ids) in one round trip that reads no row: any
   * commit, by any connection, removes its id from the in-progress ids or moves xmax, so a text
   * never comes back once anything committed (the ids are the server's: other databases' commits
   * move it too). The list page cache keys on it (src/lib/page-cache.ts).
   */
  dataVersion(): string | null | Promise<string | null>;
  /**
   * PostgreSQL: dataVersion() and the stored value of setting `key` (its JSON text, null when none
   * is stored) as committed at that version, in the one round trip dataVersion() costs alone; null
   * when no version can be given. Undefined on SQLite, whose version costs no round trip: read the
   * setting instead. The list page cache reads the hotel's `today` setting so (src/lib/pages.ts).
   */
  readonly dataVersionWithSetting?: (key: string) => Promise<{ version: string; setting: string | null } | null>;
  close(): Promise<void>;
}

const OID = { int8: 20, timestamptz: 1184, timestamp: 1114, json: 114, jsonb: 3802 } as const;

/** A timestamptz as PostgreSQL writes it in UTC (DateStyle ISO): `2026-11-24 04:28:09.362778+00`. */
const PG_UTC = /^(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2})(?:\.(\d{1,6}))?\+00$/;

/**
 * A timestamptz as the API's ISO string, what `new Date(v).toISOString()` gives (milliseconds, the
 * rest cut off). Rewritten as text when it is in UTC: V8 parses this form on its slow legacy path,
 * a visible share of a conversation list request on PostgreSQL (docs/performance.md). Any
 * other offset, year or value still goes through Date.
 */
export function pgTimestamptz(v: string): string {
  const m = PG_UTC.exec(v);
  if (m === null) return new Date(v).toISOString();
  return `${m[1]}T${m[2]}.${`${m[3] ?? ''}000`.slice(0, 3)}Z`;
}

function pgTypeParser(types: typeof pg.types, oid: number, format?: string): (value: string) => unknown {
  if (oid === OID.int8) return Number;
  if (oid === OID.timestamptz) return pgTimestamptz;
  if (oid === OID.timestamp) return (v: string) => new Date(v).toISOString();
  // JSON stays text, as on SQLite, so a JSON string value round-trips the same on both stores.
  if (oid === OID.json || oid === OID.jsonb) return (v: string) => v;
  return types.getTypeParser(oid, format as 'text') as (value: string) => unknown;
}

/** The PostgreSQL snapshot as text: what dataVersion() reads. */
const SNAPSHOT = 'select pg_current_snapshot()::text as v';
/** SNAPSHOT with a setting's stored value, read under the same statement's snapshot. */
const SNAPSHOT_AND_SETTING =
  'select pg_current_snapshot()::text as v, (select value from settings where key = $1) as s';

/** Prepared statements kept per SQLite connection; the oldest unused one goes first past this. */
const STATEMENT_CACHE_SIZE = 500;

/** Statement texts named on PostgreSQL (each prepared once per connection); later ones go unnamed. */
export const MAX_NAMED_STATEMENTS = 500;

/**
 * A statement whose best plan depends on its values starts with this comment: PostgreSQL receives it
 * unnamed and plans it with its values on every run. A named one is planned for its values only for
 * its first five runs on a connection; then PostgreSQL may keep a generic plan, made without them.
 * For a full-text search that is a wrong plan for most words: its estimate of a word it cannot see
 * makes it read and sort every match, where walking the newest messages finds a common word's
 * newest matches at once (docs/search.md).
 */
export const PLAN_WITH_VALUES = '/* plan with values */';

/**
 * Prepared statements by SQL text, the least recently used dropped past STATEMENT_CACHE_SIZE:
 * Kysely's driver prepares on every query, and compiling the same SQL again was ~15 % of a list
 * request (docs/performance.md). Sharing a statement is safe because queries on the connection run
 * one at a time (the driver's mutex, or synchronously on the fast path) and `all`/`run` reset the
 * statement when done; one still mid-`iterate` (a stream not yet finished) is busy, so the caller
 * gets a fresh, uncached one.
 */
function statementCache(conn: SQLite.Database): (text: string) => SQLite.Statement {
  const cache = new Map<string, SQLite.Statement>();
  return (text) => {
    const hit = cache.get(text);
    if (hit?.busy) return conn.prepare(text);
    if (hit !== undefined) {
      // A Map iterates in insertion order: moving a hit to the end makes the first key the least
      // recently used, the one to evict.
      cache.delete(text);
      cache.set(text, hit);
      return hit;
    }
    const stmt = conn.prepare(text);
    cache.set(text, stmt);
    if (cache.size > STATEMENT_CACHE_SIZE) {
      const oldest = cache.keys().next().value;
      if (oldest !== undefined) cache.delete(oldest);
    }
    return stmt;
  };
}

/** A reader statement's column names, read once per statement. */
const columnNames = new WeakMap<SQLite.Statement, string[]>();

/**
 * A reader's rows as objects. better-sqlite3 builds each row object in C++, one property at a time
 * through V8's API: for the conversation list's 20 rows of 11 columns that was about a third of
 * its time (docs/performance.md). Read as arrays and built here, the objects come from one hidden
 * class that V8's inline caches make cheap. Same objects, same values; a later column of the same
 * name wins, as it does in better-sqlite3.
 */
function readRows(stmt: SQLite.Statement, parameters: readonly unknown[]): Record<string, unknown>[] {
  let names = columnNames.get(stmt);
  if (names === undefined) {
    names = stmt.columns().map((c) => c.name);
    columnNames.set(stmt, names);
  }
  // The statement is shared (statementCache): raw only for this call, whatever happens in it.
  stmt.raw(true);
  let rows: unknown[][];
  try {
    rows = stmt.all(parameters) as unknown[][];
  } finally {
    stmt.raw(false);
  }
  const out = new Array<Record<string, unknown>>(rows.length);
  for (let r = 0; r < rows.length; r++) {
    const values = rows[r]!;
    const row: Record<string, unknown> = {};
    for (let i = 0; i < names.length; i++) row[names[i]!] = values[i];
    out[r] = row;
  }
  return out;
}

export interface StoreOptions {
  sqliteSynchronous?: 'FULL' | 'NORMAL';
  /**
   * An in-memory SQLite store starts as a copy of this database image (the bytes of a database
   * file) instead of empty: the tests copy one migrated image rather than migrating each store.
   */
  sqliteImage?: Buffer;
  pgPoolSize?: number;
  /** Requests that may wait for a PostgreSQL connection at once; the next is refused (POOL_FULL). */
  pgPoolMaxWaiting?: number;
}

/** Opening a connection to PostgreSQL gives up after this long (the server is down or unreachable). */
const CONNECT_TIMEOUT_MS = 2000;
/** A request waits at most this long for a connection that other requests hold. */
const WAIT_TIMEOUT_MS = 10_000;
/** The code of the error refusing a request when too many already wait for a connection. */
export const POOL_FULL = 'GMA_POOL_FULL';

export function openStore(config: StoreConfig, options: StoreOptions = {}): Store {
  if (config.kind === 'sqlite') {
    if (config.path !== ':memory:') mkdirSync(dirname(config.path), { recursive: true });
    const conn =
      options.sqliteImage !== undefined && config.path === ':memory:'
        ? new SQLite(options.sqliteImage)
        : new SQLite(config.path);
    conn.pragma('journal_mode = WAL');
    conn.pragma('foreign_keys = ON');
    conn.pragma('busy_timeout = 5000');
    // Checkpoint the WAL every ~40 MB instead of ~4 MB: hot pages (the conversations' indexes, the
    // count rows) are rewritten many times between checkpoints, and each is copied back once per
    // checkpoint, so durable writes cost fewer page writes and fsyncs (docs/performance.md). A
    // worker copies most of it in the background (src/db/checkpointer.ts), so the checkpoint that
    // runs in a commit, on the event loop, finds little left to do.
    conn.pragma('wal_autocheckpoint = 10000');
    const synchronous = options.sqliteSynchronous ?? 'FULL';
    conn.pragma(`synchronous = ${synchronous}`);
    const checkpointer = config.path === ':memory:' ? null : checkpointOffLoop(config.path, synchronous);
    // Temporary tables and statement journals in memory. Group commit runs each request in a
    // savepoint, and every page a savepoint first touches is copied to the statement journal:
    // past 64 KiB that journal spilled to a temporary file, and its writes were ~19 % of a
    // message POST's CPU (docs/performance.md).
    conn.pragma('temp_store = MEMORY');
    // Report rollups add their histograms in the store (migration 033).
    registerHistogramFunctions(conn);
    const prepare = statementCache(conn);
    // Kysely's driver reads `reader`, `all`, `run` and `iterate`; its readers get readRows' objects.
    const database: SqliteDatabase = {
      prepare(text) {
        const stmt = prepare(text);
        return {
          reader: stmt.reader,
          all: (parameters) => (stmt.reader ? readRows(stmt, parameters) : stmt.all(parameters)),
          run: (parameters) => stmt.run(parameters),
          iterate: (parameters) => stmt.iterate(parameters),
        };
      },
      close: () => conn.close(),
    };
    const db = new Kysely<Database>({ dialect: new SqliteDialect({ database }) });
    // A statement run at once on the cached prepared statement.
    const direct: RunSql = async <R>(text: string, parameters: readonly unknown[]) => {
      const stmt = prepare(text);
      if (stmt.reader) return readRows(stmt, parameters) as R[];
      stmt.run(parameters);
      return [];
    };
    // Outside a transaction a statement runs at once; while one of Kysely's transactions is open on
    // the connection (between its awaits), it queues behind it instead.
    const root = executor(db, 'sqlite', async <R>(text: string, parameters: readonly unknown[]) =>
      conn.inTransaction
        ? (await db.executeQuery<R>(CompiledQuery.raw(text, [...parameters]))).rows
        : direct<R>(text, parameters),
    );
    // Inside a group commit's batch the connection is the batch's alone: its statements run at once.
    const committer = new GroupCommitter(db, (statement) => prepare(statement).run(), direct);
    // total_changes(): rows written by this connection, triggers included, committed or not (it
    // reads no page); data_version: moves when another connection commits. Together they
    // move on every change. Two statements, not `from pragma_data_version()`: that table-valued
    // form parses and prepares a PRAGMA on every call (docs/performance.md).
    const changes = conn.prepare('select total_changes()').pluck();
    const dataVersion = conn.prepare('pragma data_version').pluck();
    const readVersion = (): string | null => {
      if (conn.inTransaction) return null;
      return `${changes.get() as number}.${dataVersion.get() as number}`;
    };
    return {
      ...joining(root),
      db,
      transact: (work) => (requestTx() ? joinRequestTx(work) : committer.run(work)),
      eventsCommitted: new Signal(),
      maintenance: (work) => work(db),
      poolUse: () => null,
      readVersion,
      // A request transaction holds the connection in a transaction: readVersion() is null then.
      dataVersion: readVersion,
      async ping() {
        conn.prepare('select 1').get();
      },
      async close() {
        await checkpointer?.stop();
        await db.destroy();
        // Kysely's driver closes the connection only if a query ever went through it, and most
        // statements run on the connection directly (`direct`).
        if (conn.open) conn.close();
      },
    };
  }
  const driver = loadPg();
  const types = {
    getTypeParser: ((oid: number, format?: string) =>
      pgTypeParser(driver.types, oid, format)) as typeof driver.types.getTypeParser,
  };
  const max = options.pgPoolSize ?? 10;
  const maxWaiting = options.pgPoolMaxWaiting ?? 1000;
  const pool = new driver.Pool({
    connectionString: config.url,
    max,
    // Two bounds, which pg sets with one option: opening a connection to the server gives up after
    // CONNECT_TIMEOUT_MS (the client's own timer, below), while a request waiting for a connection
    // another request holds waits up to WAIT_TIMEOUT_MS. A burst larger than the pool on a busy
    // machine queues and is served in turn rather than failing at the connect timeout; how many may
    // wait is bounded by `pgPoolMaxWaiting` (see `checkout`).
    connectionTimeoutMillis: WAIT_TIMEOUT_MS,
    Client: class extends driver.Client {
      constructor(c?: pg.ClientConfig) {
        super({ ...c, connectionTimeoutMillis: CONNECT_TIMEOUT_MS });
      }
    },
    idleTimeoutMillis: 30_000,
    // A statement that runs away is cancelled by the server (57014), and a server that stops
    // answering mid-query is given up on by the client, so a request never hangs on the store:
    // both answer 503 SERVICE_UNAVAILABLE (src/plugins/errors.ts). TCP keep-alive notices a peer
    // that vanished without closing its connections.
    statement_timeout: 15_000,
    query_timeout: 20_000,
    // No JIT compilation: it starts for any plan costed above jit_above_cost, costs tens of ms
    // (more than most of this API's statements take), and a search's plan is costed for a half it
    // seldom runs (docs/search.md). A DATABASE_URL naming its own `options` replaces this.
    options: '-c jit=off',
    keepAlive: true,
    types,
  });
  // An idle client losing its server must not crash the process; the next query reports it.
  pool.on('error', () => {});
  // Nor must a client losing it while checked out (a query or transaction in flight, e.g. the
  // event poller or webhook dispatcher during a server restart): pg rejects that query, then emits
  // 'error' on the client, which the pool listens to only while the client is idle.
  pool.on('connect', (client) => client.on('error', () => {}));
  // Named statements are parsed and planned once per connection; the name is the SQL's digest.
  // Each name is kept here, in pg's per-connection table and in every PostgreSQL backend for the
  // life of the connection, and nothing else bounds the texts (an IN list per length, a multi-row
  // insert per row count): past MAX_NAMED_STATEMENTS texts, a new one is sent unnamed (parsed on
  // each run). The hot statements are named long before: a process meets them first.
  const names = new Map<string, string>();
  const nameOf = (text: string): string | undefined => {
    if (text.startsWith(PLAN_WITH_VALUES)) return undefined;
    let name = names.get(text);
    if (name === undefined) {
      if (names.size >= MAX_NAMED_STATEMENTS) return undefined;
      name = `gma_${createHash('sha256').update(text).digest('base64url').slice(0, 24)}`;
      names.set(text, name);
    }
    return name;
  };
  // Kysely's statements (every statement of a transaction) are named too: sent unnamed, each was
  // parsed and planned again on every execution, the largest part of PostgreSQL's work per write.
  // Statements without parameters (BEGIN, COMMIT, savepoints, migrations' DDL) stay unnamed.
  // A request that would wait behind `maxWaiting` others is refused at once (503, Retry-After):
  // past that, waiting only piles up work the clients have likely given up on.
  const checkout = () => {
    if (pool.idleCount === 0 && pool.totalCount >= max && pool.waitingCount >= maxWaiting) {
      throw Object.assign(new Error(`every PostgreSQL connection is busy and ${maxWaiting} requests wait`), {
        code: POOL_FULL,
      });
    }
  };
  const kyselyPool: PostgresPool = {
    async connect() {
      checkout();
      const client = await pool.connect();
      return {
        query: ((text: unknown, parameters?: readonly unknown[]) => {
          if (typeof text === 'string' && parameters !== undefined && parameters.length > 0) {
            return client.query({ name: nameOf(text), text, values: parameters as unknown[] });
          }
          // Several statements in one simple query (a statement sent with its COMMIT) answer one
          // result each: Kysely reads one, so it gets the rows of the statement that has some.
          return client.query(text as string, parameters as unknown[]).then((result) => {
            if (!Array.isArray(result)) return result;
            const all = result as unknown as pg.QueryResult[];
            return all.find((r) => r.command === 'SELECT') ?? all[all.length - 1];
          });
        }) as unknown as PostgresPoolClient['query'],
        release: () => client.release(),
      };
    },
    end: () => pool.end(),
  };
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool: kyselyPool }) });
  const root = executor(db, 'postgres', async <R>(text: string, parameters: readonly unknown[]) => {
    checkout();
    const result = await pool.query({ name: nameOf(text), text, values: parameters as unknown[] });
    return result.rows as R[];
  });
  const transactOnce = async <T>(work: (tx: Tx) => Promise<T>): Promise<T> => {
    let committed = () => {};
    // BEGIN and COMMIT sent here rather than by Kysely's transaction(), so that the transaction's
    // last statement can travel with its COMMIT (Tx.withCommit).
    const result = await db.connection().execute(async (conn) => {
      const raw = (text: string) => conn.executeQuery(CompiledQuery.raw(text));
      let last: string | null = null;
      let lastDone: ((rows: Record<string, unknown>[]) => void) | undefined;
      await raw('begin');
      try {
        // Statements go through the transaction's connection (Kysely holds it).
        const t = transaction(
          conn,
          'postgres',
          async (text, parameters) =>
            (await conn.executeQuery(CompiledQuery.raw(text, [...parameters]))).rows as never[],
          (text, parameters, done) => {
            if (last !== null) throw new Error('withCommit: one statement per transaction');
            last = inlineParameters(text, parameters, escapeLiteral);
            lastDone = done;
          },
          'totals',
        );
        committed = t.committed;
        const value = await work(t.tx);
        const totals = new Map<CommitTotal<unknown>, unknown>();
        addParts(totals, t.parts);
        const atCommit = totalStatements(t.tx, totals).map((q) => inlineParameters(q.sql, q.parameters, escapeLiteral));
        if (last !== null) atCommit.push(last);
        atCommit.push('commit');
        // Sent as one simple query: if a statement fails, PostgreSQL skips the rest and the COMMIT.
        const done = await raw(atCommit.join(';\n'));
        lastDone?.(done.rows as Record<string, unknown>[]);
        return value;
      } catch (err) {
        await raw('rollback').catch(() => {});
        throw err;
      }
    });
    committed();
    return result;
  };
  return {
    ...joining(root),
    db,
    async transact(work) {
      if (requestTx()) return joinRequestTx(work);
      // PostgreSQL aborts one transaction of a deadlock (and of a serialization conflict) and
      // expects it to be run again: triggers that keep counts lock rows of several tables, and
      // two concurrent writes of related rows (a guest's tags, a new conversation of that guest)
      // can meet in opposite orders. The whole of `work` runs again, in a new transaction.
      for (let attempt = 1; ; attempt++) {
        try {
          return await transactOnce(work);
        } catch (err) {
          if (attempt >= TX_ATTEMPTS || !isConflict(err)) throw err;
          await new Promise((r) => setTimeout(r, Math.random() * 5 * attempt));
        }
      }
    },
    eventsCommitted: new Signal(),
    async maintenance(work) {
      // Neither timeout of the request pool: building an index over millions of rows takes minutes.
      const own = new driver.Pool({ connectionString: config.url, max: 1, keepAlive: true, types });
      own.on('error', () => {});
      const k = new Kysely<Database>({ dialect: new PostgresDialect({ pool: own }) });
      try {
        return await work(k);
      } finally {
        await k.destroy();
      }
    },
    poolUse: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
    readVersion: () => null,
    async dataVersion() {
      if (requestTx()) return null;
      checkout();
      const { rows } = await pool.query<{ v: string }>({ name: 'gma_snapshot', text: SNAPSHOT });
      return rows[0]!.v;
    },
    async dataVersionWithSetting(key) {
      if (requestTx()) return null;
      checkout();
      const { rows } = await pool.query<{ v: string; s: string | null }>({
        name: 'gma_snapshot_setting',
        text: SNAPSHOT_AND_SETTING,
        values: [key],
      });
      return { version: rows[0]!.v, setting: rows[0]!.s };
    },
    async ping() {
      await sql`select 1`.execute(db);
    },
    async close() {
      await db.destroy();
    },
  };
}

/**
 * A string as a PostgreSQL literal, exactly as pg's escapeLiteral writes it (quotes doubled; with a
 * backslash, doubled too in an E'' string), but with the string's own replaceAll rather than a
 * character at a time: the events a transaction sends with its COMMIT are kilobytes of JSON.
 */
export function escapeLiteral(value: string): string {
  const quoted = value.replaceAll("'", "''");
  return value.includes('\\') ? ` E'${quoted.replaceAll('\\', '\\\\')}'` : `'${quoted}'`;
}

/**
 * `text` with each `$n` replaced by its value as a PostgreSQL literal, for a statement sent by the
 * simple query protocol (which carries no parameters). Strings go through escapeLiteral, so a
 * value can never end its literal early; only the types our statements bind are accepted.
 */
export function inlineParameters(
  text: string,
  parameters: readonly unknown[],
  escapeLiteral: (value: string) => string,
): string {
  return text.replace(/\$(\d+)/g, (_, n: string) => {
    const i = Number(n) - 1;
    if (i < 0 || i >= parameters.length) throw new Error(`inlineParameters: no value for $${n}`);
    const v = parameters[i];
    if (v === null || v === undefined) return 'null';
    if (typeof v === 'string') return escapeLiteral(v);
    if (typeof v === 'number' && Number.isFinite(v)) return String(v);
    if (typeof v === 'bigint') return String(v);
    if (typeof v === 'boolean') return v ? 'true' : 'false';
    if (v instanceof Date) return escapeLiteral(v.toISOString());
    throw new Error(`inlineParameters: cannot write a ${typeof v} as a literal`);
  });
}

/** JSON columns are written as text on both stores. */
export const toJson = (value: unknown): string => JSON.stringify(value);
export const fromJson = <T>(value: unknown): T => (typeof value === 'string' ? JSON.parse(value) : value) as T;
/** Booleans are written as 0/1, which PostgreSQL also accepts for a boolean parameter. */
export const toBool = (value: boolean): number => (value ? 1 : 0);
export const toIso = (value: string | Date): string => (typeof value === 'string' ? value : value.toISOString());
export const nowIso = (): string => new Date().toISOString();

/**
 * `column` among `candidates`, chosen once. On PostgreSQL an array of them, whose select runs once
 * before the statement: written as `in (…)` the planner may join them and run them again for each
 * row of the table, and a run that skips the rows the last one locked leases far more than its
 * limit (migration 036). SQLite runs the statement alone.
 */
export function chosenOnce(db: Pick<Executor, 'dialect'>, column: string, candidates: Compilable) {
  return db.dialect === 'postgres'
    ? sql<boolean>`${sql.ref(column)} = any(array(${candidates}))`
    : sql<boolean>`${sql.ref(column)} in (${candidates})`;
}

/** LIKE pattern for a case-insensitive substring match where % and _ are literal (ESCAPE '\'). */
export const likeContains = (term: string): string => `%${term.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

function errCode(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** Attempts of a PostgreSQL transaction that loses a deadlock or a serialization conflict. */
const TX_ATTEMPTS = 4;

/** PostgreSQL chose this transaction to abort in a deadlock, or to fail a serializable one. */
export const isConflict = (err: unknown): boolean => {
  const c = errCode(err);
  return c === '40P01' || c === '40001';
};

/** A unique or primary-key constraint was violated (SQLite or PostgreSQL). */
export const isUniqueViolation = (err: unknown): boolean => {
  const c = errCode(err);
  return c === '23505' || c === 'SQLITE_CONSTRAINT_UNIQUE' || c === 'SQLITE_CONSTRAINT_PRIMARYKEY';
};

/** A foreign-key constraint was violated (SQLite or PostgreSQL). */
export const isForeignKeyViolation = (err: unknown): boolean => {
  const c = errCode(err);
  return c === '23503' || c === 'SQLITE_CONSTRAINT_FOREIGNKEY';
};
