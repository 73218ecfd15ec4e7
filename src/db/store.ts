// Owns the connection to the store: one Kysely instance over better-sqlite3 or pg, chosen by
// config, with the few dialect differences (types returned, pragmas, pool) settled here so the
// rest of the code sees ISO timestamp strings, JSON text and numeric counts on both.
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect, sql } from 'kysely';
import pg from 'pg';
import type { StoreConfig } from '../config.js';
import type { Database, Db } from './types.js';

export type DialectName = 'sqlite' | 'postgres';

export interface Store {
  readonly db: Db;
  readonly dialect: DialectName;
  /** Resolves when the store answers a trivial query. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

const PG_TYPES = pg.types;
const OID = { int8: 20, timestamptz: 1184, timestamp: 1114, json: 114, jsonb: 3802 } as const;

function pgTypeParser(oid: number, format?: string): (value: string) => unknown {
  if (oid === OID.int8) return Number;
  if (oid === OID.timestamptz || oid === OID.timestamp) return (v: string) => new Date(v).toISOString();
  // JSON stays text, as on SQLite, so a JSON string value round-trips the same on both stores.
  if (oid === OID.json || oid === OID.jsonb) return (v: string) => v;
  return PG_TYPES.getTypeParser(oid, format as 'text') as (value: string) => unknown;
}

export interface StoreOptions {
  sqliteSynchronous?: 'FULL' | 'NORMAL';
  pgPoolSize?: number;
}

export function openStore(config: StoreConfig, options: StoreOptions = {}): Store {
  if (config.kind === 'sqlite') {
    if (config.path !== ':memory:') mkdirSync(dirname(config.path), { recursive: true });
    const conn = new SQLite(config.path);
    conn.pragma('journal_mode = WAL');
    conn.pragma('foreign_keys = ON');
    conn.pragma('busy_timeout = 5000');
    conn.pragma(`synchronous = ${options.sqliteSynchronous ?? 'FULL'}`);
    const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: conn }) });
    return {
      db,
      dialect: 'sqlite',
      async ping() {
        conn.prepare('select 1').get();
      },
      async close() {
        await db.destroy();
      },
    };
  }
  const pool = new pg.Pool({
    connectionString: config.url,
    max: options.pgPoolSize ?? 10,
    connectionTimeoutMillis: 2000,
    idleTimeoutMillis: 30_000,
    types: { getTypeParser: pgTypeParser as typeof PG_TYPES.getTypeParser },
  });
  // An idle client losing its server must not crash the process; the next query reports it.
  pool.on('error', () => {});
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  return {
    db,
    dialect: 'postgres',
    async ping() {
      await sql`select 1`.execute(db);
    },
    async close() {
      await db.destroy();
    },
  };
}

/** JSON columns are written as text on both stores. */
export const toJson = (value: unknown): string => JSON.stringify(value);
export const fromJson = <T>(value: unknown): T => (typeof value === 'string' ? JSON.parse(value) : value) as T;
/** Booleans are written as 0/1, which PostgreSQL also accepts for a boolean parameter. */
export const toBool = (value: boolean): number => (value ? 1 : 0);
export const toIso = (value: string | Date): string => (typeof value === 'string' ? value : value.toISOString());
export const nowIso = (): string => new Date().toISOString();

/** LIKE pattern for a case-insensitive substring match where % and _ are literal (ESCAPE '\'). */
export const likeContains = (term: string): string => `%${term.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

function errCode(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

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
