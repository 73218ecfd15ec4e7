// Owns group commit on SQLite. With synchronous=FULL every commit waits for the disk (one fsync of
// the WAL), and SQLite commits one transaction at a time, so durable writes were
// capped by the disk at a few thousand a second whatever the CPU. Write transactions that arrive
// while one is committing are run together in the next transaction instead, each in its own
// savepoint, and made durable by one commit. Each caller is answered only after that commit:
// acknowledged still means on disk. A transaction that fails is rolled back to its savepoint
// alone; if the commit itself fails, every transaction of the batch gets the error.
// This is the SQLite store's `transact` (src/db/store.ts).
import { addParts, type CommitTotal, type RunSql, type Tx, totalStatements, transaction } from './executor.js';
import { outsideRequestTx } from './request-tx.js';
import type { Db } from './types.js';

export type TxWork<T> = (tx: Tx) => Promise<T>;

interface Job {
  work: TxWork<unknown>;
  resolve(value: unknown): void;
  reject(error: unknown): void;
  outcome?: { ok: true; value: unknown } | { ok: false; error: unknown };
  /** Calls the transaction's onCommit listeners. */
  committed?: () => void;
}

/** At most this many transactions share a commit, so one batch cannot hold the writer for long. */
const MAX_BATCH = 64;

export class GroupCommitter {
  private queue: Job[] = [];
  private draining = false;

  /**
   * @param exec runs a statement on the connection the transactions use, at once (savepoints are
   * opened and released there while the batch's transaction holds the connection).
   * @param direct runs a prepared statement on that connection at once: while the batch's
   * transaction holds the connection, its statements need not queue behind Kysely's.
   */
  constructor(
    private readonly db: Db,
    private readonly exec: (statement: string) => void,
    private readonly direct: RunSql,
  ) {}

  run<T>(work: TxWork<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ work, resolve: resolve as (v: unknown) => void, reject });
      if (!this.draining) {
        this.draining = true;
        // Requests parsed in the same turn of the event loop join the first batch. The drain runs
        // every caller's work, so it belongs to none of their request transactions.
        outsideRequestTx(() => setImmediate(() => void this.drain()));
      }
    });
  }

  private async drain(): Promise<void> {
    while (this.queue.length > 0) await this.commit(this.queue.splice(0, MAX_BATCH));
    this.draining = false;
  }

  private async commit(batch: Job[]): Promise<void> {
    try {
      await this.db.transaction().execute(async (batchTx) => {
        // Totals the batch's transactions add to (Tx.addAtCommit): summed over the ones that
        // stand and written once, after the last, so a running total many requests share (a
        // report rollup row) is written once per commit rather than once per request.
        const totals = new Map<CommitTotal<unknown>, unknown>();
        for (const job of batch) {
          // Each job its own handle: its onCommit listeners are its own, run only if it stands.
          const { tx, committed, parts } = transaction(batchTx, 'sqlite', this.direct, undefined, 'totals');
          this.exec('savepoint group_commit');
          try {
            const value = await job.work(tx);
            this.exec('release group_commit');
            job.outcome = { ok: true, value };
            job.committed = committed;
            addParts(totals, parts);
          } catch (error) {
            job.outcome = { ok: false, error };
            // Undo this transaction's writes only; the others of the batch stand.
            this.exec('rollback to group_commit');
            this.exec('release group_commit');
          }
        }
        if (totals.size === 0) return;
        const { tx } = transaction(batchTx, 'sqlite', this.direct);
        for (const q of totalStatements(tx, totals)) await this.direct(q.sql, q.parameters);
      });
    } catch (error) {
      // Nothing of the batch was committed.
      for (const job of batch) job.reject(job.outcome?.ok === false ? job.outcome.error : error);
      return;
    }
    for (const job of batch) {
      const o = job.outcome!;
      if (o.ok) {
        job.committed?.();
        job.resolve(o.value);
      } else job.reject(o.error);
    }
  }
}
