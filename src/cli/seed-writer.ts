// Owns the demo seeder's bulk writing: multi-row INSERT statements in batched transactions on
// either store, and the progress bar on stderr.
import { CompiledQuery, type Transaction } from 'kysely';
import type { DialectName, Store } from '../db/store.js';
import type { Database } from '../db/types.js';
import { formatCount } from './seed-options.js';

/** SQLite's default SQLITE_MAX_VARIABLE_NUMBER, and the PostgreSQL protocol's 16-bit count. */
const MAX_PARAMS: Record<DialectName, number> = { sqlite: 32766, postgres: 65535 };
/** Statements per transaction: few enough commits to be cheap, small enough to keep WAL and locks short. */
const STATEMENTS_PER_TX = 20;

type Tx = Transaction<Database>;

/** Rows for one table, written as multi-row INSERTs of a fixed size (the last one smaller). */
export class TableSink {
  private params: unknown[] = [];
  private rows = 0;
  readonly rowsPerStatement: number;
  private readonly sqlCache = new Map<number, string>();
  written = 0;

  constructor(
    private readonly writer: BulkWriter,
    readonly table: keyof Database,
    readonly columns: readonly string[],
    batch: number,
  ) {
    this.rowsPerStatement = Math.max(1, Math.min(batch, Math.floor(MAX_PARAMS[writer.dialect] / columns.length)));
  }

  /**
   * Buffers a row. Statements go out only when the writer asks, sink by sink in dependency order,
   * so rows referencing a parent (guest_tags → guests) never reach the store before it.
   */
  row(...values: unknown[]): void {
    for (const v of values) this.params.push(v);
    this.rows++;
  }

  /** Emits every full statement buffered; the rest waits for more rows or the end of the transaction. */
  flushFull(): void {
    while (this.rows >= this.rowsPerStatement) this.emit(this.rowsPerStatement);
  }

  flush(): void {
    this.flushFull();
    if (this.rows > 0) this.emit(this.rows);
  }

  private emit(rows: number): void {
    const all = rows === this.rows;
    const params = all ? this.params : this.params.splice(0, rows * this.columns.length);
    if (all) this.params = [];
    this.rows -= rows;
    this.written += rows;
    this.writer.enqueue(this.sql(rows), params);
  }

  private sql(rows: number): string {
    let text = this.sqlCache.get(rows);
    if (text !== undefined) return text;
    const n = this.columns.length;
    const tuples: string[] = [];
    for (let r = 0; r < rows; r++) {
      const slots: string[] = [];
      for (let c = 1; c <= n; c++) slots.push(this.writer.dialect === 'postgres' ? `$${r * n + c}` : '?');
      tuples.push(`(${slots.join(',')})`);
    }
    text = `insert into "${this.table}" (${this.columns.map((c) => `"${c}"`).join(',')}) values ${tuples.join(',')}`;
    // Only the full-size statement repeats; a short tail is built once per transaction.
    if (rows === this.rowsPerStatement) this.sqlCache.set(rows, text);
    return text;
  }
}

/**
 * Runs the statements of one transaction at a time. Full statements are sent after each step and
 * awaited only before the next one, so on PostgreSQL the next batch is generated while the server
 * inserts the previous one.
 */
export class BulkWriter {
  readonly dialect: DialectName;
  private tx: Tx | undefined;
  private pending: Promise<unknown> | undefined;
  private queue: { text: string; params: unknown[] }[] = [];

  constructor(private readonly store: Store) {
    this.dialect = store.dialect;
  }

  /** `columns` space-separated, in the order `row` gets the values. */
  sink(table: keyof Database, columns: string, batch: number): TableSink {
    return new TableSink(this, table, columns.split(' '), batch);
  }

  enqueue(text: string, params: unknown[]): void {
    this.queue.push({ text, params });
  }

  /** Sends what is queued, in order, overlapping the last statement with the caller's next work. */
  private async drain(): Promise<void> {
    const tx = this.tx;
    if (tx === undefined) throw new Error('no open transaction');
    for (const { text, params } of this.queue.splice(0)) {
      await this.pending;
      const p = tx.executeQuery(CompiledQuery.raw(text, params));
      // Awaited before the next statement or the commit; this keeps a failure from being reported
      // as unhandled while the caller is still generating rows.
      p.catch(() => {});
      this.pending = p;
    }
  }

  /**
   * Calls `produce(start, count)` for consecutive ranges of `total` items, `perStep` at a time
   * and STATEMENTS_PER_TX steps per transaction; `produce` pushes rows into `sinks` (parents
   * first), and full statements go out between steps while the next one is generated.
   */
  async run(
    total: number,
    perStep: number,
    produce: (start: number, count: number) => void,
    sinks: TableSink[],
    onStep: () => void,
  ): Promise<void> {
    const perTx = perStep * STATEMENTS_PER_TX;
    for (let txStart = 0; txStart < total; txStart += perTx) {
      const txEnd = Math.min(total, txStart + perTx);
      await this.store.db.transaction().execute(async (tx) => {
        this.tx = tx;
        try {
          for (let start = txStart; start < txEnd; start += perStep) {
            produce(start, Math.min(perStep, txEnd - start));
            for (const s of sinks) s.flushFull();
            await this.drain();
            onStep();
          }
          for (const s of sinks) s.flush();
          await this.drain();
          await this.pending;
        } finally {
          this.pending = undefined;
          this.queue = [];
          this.tx = undefined;
        }
      });
    }
  }
}

/**
 * A one-line progress bar on a terminal (redrawn at most ten times a second); when stderr is not
 * a terminal (CI, a log file), a plain line at every tenth of the way so logs stay short.
 */
export class Progress {
  private readonly started = performance.now();
  private lastDraw = 0;
  private lastTenth = 0;
  private readonly tty = process.stderr.isTTY === true;

  constructor(
    private readonly label: string,
    private readonly total: number,
  ) {}

  update(done: number): void {
    const now = performance.now();
    if (this.tty) {
      if (now - this.lastDraw < 100 && done < this.total) return;
      this.lastDraw = now;
      process.stderr.write(`\r\x1b[2K${this.line(done, now)}`);
      return;
    }
    const tenth = this.total === 0 ? 10 : Math.floor((done * 10) / this.total);
    // Only forward steps are printed, so a log shows 10%, 20%, … and the final line once.
    if (tenth <= this.lastTenth) return;
    this.lastTenth = tenth;
    process.stderr.write(`${this.line(done, now)}\n`);
  }

  /** Ends the bar and returns the elapsed milliseconds. */
  finish(): number {
    const now = performance.now();
    if (this.tty) process.stderr.write(`\r\x1b[2K${this.line(this.total, now)}\n`);
    else if (this.lastTenth !== 10) process.stderr.write(`${this.line(this.total, now)}\n`);
    return now - this.started;
  }

  private line(done: number, now: number): string {
    const width = 24;
    const frac = this.total === 0 ? 1 : done / this.total;
    const filled = Math.round(frac * width);
    const rate = done / Math.max((now - this.started) / 1000, 1e-3);
    return `${this.label.padEnd(13)} [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${formatCount(done)}/${formatCount(this.total)} ${(frac * 100).toFixed(0).padStart(3)}%  ${formatCount(rate)}/s`;
  }
}
