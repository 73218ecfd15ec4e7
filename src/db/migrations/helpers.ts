// Owns the column types that differ between SQLite and PostgreSQL, so each migration is written once.
import type { ColumnDataType, Kysely } from 'kysely';

/**
 * The dialects migrations are written for. Named here rather than imported from the store: a
 * migration imports no live code. The migrator passes the store's dialect in, so a dialect the
 * store gains and the migrations do not know fails to compile there.
 */
export type DialectName = 'sqlite' | 'postgres';

export interface ColumnTypes {
  dialect: DialectName;
  /** ISO 8601 text on SQLite, timestamptz on PostgreSQL. */
  ts: ColumnDataType;
  json: ColumnDataType;
  bool: ColumnDataType;
  /**
   * A 64-bit auto-incrementing key that is never reused (cursors over it stay monotonic after
   * deletes): integer + AUTOINCREMENT on SQLite (add `.autoIncrement()` when t.dialect is sqlite),
   * bigserial on PostgreSQL.
   */
  autoId: ColumnDataType;
}

export function columnTypes(dialect: DialectName): ColumnTypes {
  return dialect === 'postgres'
    ? { dialect, ts: 'timestamptz', json: 'jsonb', bool: 'boolean', autoId: 'bigserial' }
    : { dialect, ts: 'text', json: 'text', bool: 'integer', autoId: 'integer' };
}

export interface MigrationDef {
  name: string;
  // biome-ignore lint/suspicious/noExplicitAny: migrations run before and outside the typed schema.
  up(db: Kysely<any>, t: ColumnTypes): Promise<void>;
}
