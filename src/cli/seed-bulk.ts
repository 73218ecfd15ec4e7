// Owns the seed's bulk loading of derived rows (report facts, rollups, running state): rows buffered
// per table and written many per statement in long transactions. SQLite: a multi-row INSERT
// prepared once per size. PostgreSQL: one INSERT … SELECT FROM unnest($1::text[], …) per few
// thousand rows, a statement of a few parameters however many rows it carries (parsed and planned
// once, no per-row parameter binding), on a connection of its own without the pool's statement
// timeouts, and the next statement sent while the server runs the previous one.
import { CompiledQuery } from 'kysely';
import pg from 'pg';
import type { Store } from '../db/store.js';

export interface BulkTable {
  table: string;
  columns: readonly string[];
  /** Each column's PostgreSQL type as sent: `text`, `int8`, `float8` … (`int4[]` goes as text). */
  types: readonly string[];
  /** `on conflict …` clause, if any (the same text on both stores). */
  onConflict?: string;
}

/** Statements PostgreSQL may have in hand at once: one running, one sent behind it. */
const IN_FLIGHT = 2;
const PG_ROWS = 5000;
/** SQLite's bound parameters per statement stay well under its limit (32,766). */
const SQLITE_PARAMS = 8000;

/** Buffers one table's rows, column by column. */
export class BulkSink {
  private values: unknown[][];
  rows = 0;
  written = 0;

  constructor(
    private readonly loader: BulkLoader,
    readonly spec: BulkTable,
    readonly rowsPerStatement: number,
  ) {
    this.values = spec.columns.map(() => []);
  }

  /** Buffers one row (values in `columns` order); full statements go out as they fill. */
  async add(...row: unknown[]): Promise<void> {
    for (let c = 0; c < row.length; c++) this.values[c]!.push(row[c]);
    if (++this.rows >= this.rowsPerStatement) await this.flush();
  }

  async flush(): Promise<void> {
    if (this.rows === 0) return;
    const values = this.values;
    const rows = this.rows;
    this.values = this.spec.columns.map(() => []);
    this.rows = 0;
    this.written += rows;
    await this.loader.write(this.spec, values, rows);
  }
}

export abstract class BulkLoader {
  protected readonly sinks: BulkSink[] = [];

  static async open(store: Store, pgUrl: string | undefined): Promise<BulkLoader> {
    const loader: BulkLoader = store.dialect === 'postgres' ? new PgLoader(pgUrl ?? '') : new SqliteLoader(store);
    await loader.connect();
    await loader.begin();
    return loader;
  }

  sink(spec: BulkTable): BulkSink {
    const s = new BulkSink(this, spec, this.rowsPerStatement(spec));
    this.sinks.push(s);
    return s;
  }

  /** Writes every buffered row and commits; the next row starts a new transaction. */
  async commit(): Promise<void> {
    for (const s of this.sinks) await s.flush();
    await this.end('commit');
    await this.begin();
  }

  /** Commits what is buffered and closes the loader. */
  async close(): Promise<void> {
    for (const s of this.sinks) await s.flush();
    await this.end('commit');
    await this.release();
  }

  /** Rolls back what the current transaction wrote and closes the loader. */
  async abort(): Promise<void> {
    await this.end('rollback').catch(() => {});
    await this.release().catch(() => {});
  }

  abstract write(spec: BulkTable, values: unknown[][], rows: number): Promise<void>;
  /** Sets `column` of the rows of `table` by id, in one statement (after every buffered row is written). */
  abstract setColumn(table: string, column: string, pgType: string, values: [string, unknown][]): Promise<void>;
  protected abstract rowsPerStatement(spec: BulkTable): number;
  protected abstract connect(): Promise<void>;
  protected abstract begin(): Promise<void>;
  protected abstract end(how: 'commit' | 'rollback'): Promise<void>;
  protected abstract release(): Promise<void>;
}

class SqliteLoader extends BulkLoader {
  private readonly texts = new Map<string, string>();

  constructor(private readonly store: Store) {
    super();
  }

  private exec(text: string, params: unknown[] = []): Promise<unknown> {
    return this.store.db.executeQuery(CompiledQuery.raw(text, params));
  }

  protected rowsPerStatement(spec: BulkTable): number {
    return Math.max(1, Math.floor(SQLITE_PARAMS / spec.columns.length));
  }

  protected async connect() {}

  protected begin() {
    return this.exec('begin').then(() => {});
  }

  protected end(how: 'commit' | 'rollback') {
    return this.exec(how).then(() => {});
  }

  protected async release() {}

  async setColumn(table: string, column: string, _pgType: string, values: [string, unknown][]): Promise<void> {
    const PER = Math.floor(SQLITE_PARAMS / 2);
    for (let i = 0; i < values.length; i += PER) {
      const part = values.slice(i, i + PER);
      await this.exec(
        `update "${table}" set "${column}" = v.column2 from (values ${part.map(() => '(?,?)').join(',')}) as v where "${table}".id = v.column1`,
        part.flat(),
      );
    }
  }

  async write(spec: BulkTable, values: unknown[][], rows: number): Promise<void> {
    const key = `${spec.table}|${rows}`;
    let text = this.texts.get(key);
    if (text === undefined) {
      const tuple = `(${spec.columns.map(() => '?').join(',')})`;
      text = `insert into "${spec.table}" (${spec.columns.map((c) => `"${c}"`).join(',')}) values ${Array(rows)
        .fill(tuple)
        .join(',')}${spec.onConflict === undefined ? '' : ` ${spec.onConflict}`}`;
      this.texts.set(key, text);
    }
    const n = spec.columns.length;
    const params = new Array(rows * n);
    for (let c = 0; c < n; c++) {
      const col = values[c]!;
      for (let r = 0; r < rows; r++) params[r * n + c] = col[r];
    }
    await this.exec(text, params);
  }
}

class PgLoader extends BulkLoader {
  private readonly client: pg.Client;
  private readonly texts = new Map<string, string>();
  private inFlight: Promise<unknown>[] = [];

  constructor(url: string) {
    super();
    this.client = new pg.Client({ connectionString: url });
  }

  protected rowsPerStatement(): number {
    return PG_ROWS;
  }

  protected async connect() {
    await this.client.connect();
    // This connection loads rows in bulk: a statement may run long, and the seed is re-run if a
    // crash loses its last commits.
    await this.client.query('set statement_timeout = 0');
    await this.client.query('set synchronous_commit = off');
  }

  protected async begin() {
    await this.client.query('begin');
  }

  async setColumn(table: string, column: string, pgType: string, values: [string, unknown][]): Promise<void> {
    for (const s of this.sinks) await s.flush();
    await this.client.query(
      `update "${table}" set "${column}" = v.value from unnest($1::text[], $2::${pgType}[]) as v(id, value) where "${table}".id = v.id`,
      [values.map((v) => v[0]), values.map((v) => v[1])],
    );
  }

  protected async end(how: 'commit' | 'rollback') {
    const pending = this.inFlight;
    this.inFlight = [];
    try {
      await Promise.all(pending);
    } finally {
      await this.client.query(how);
    }
  }

  protected release() {
    return this.client.end();
  }

  async write(spec: BulkTable, values: unknown[][]): Promise<void> {
    let text = this.texts.get(spec.table);
    if (text === undefined) {
      const cols = spec.columns.map((c) => `"${c}"`).join(',');
      // An array type travels as text and is cast here: unnest would flatten an array of arrays.
      const select = spec.columns.map((c, i) =>
        spec.types[i]!.endsWith('[]') ? `u."${c}"::${spec.types[i]}` : `u."${c}"`,
      );
      const arrays = spec.types.map((t, i) => `$${i + 1}::${t.endsWith('[]') ? 'text' : t}[]`);
      text = `insert into "${spec.table}" (${cols}) select ${select.join(',')} from unnest(${arrays.join(',')}) as u(${cols})${
        spec.onConflict === undefined ? '' : ` ${spec.onConflict}`
      }`;
      this.texts.set(spec.table, text);
    }
    if (this.inFlight.length >= IN_FLIGHT) await this.inFlight.shift();
    const p = this.client.query({ name: `seed_${spec.table}`, text, values });
    // Awaited in turn (above, or at the commit); this keeps a failure from being reported as
    // unhandled while the next rows are generated.
    p.catch(() => {});
    this.inFlight.push(p);
  }
}
