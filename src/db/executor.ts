// Owns the one way a query reaches the store: an executor, which is the store itself or one of
// its transactions. Repositories take an executor and either build a query with Kysely's builder
// (`x.selectFrom(…)`, run by Kysely) or run a prepared statement (`x.run(q, params)`), which the
// store executes its own way: a cached prepared statement run at once on SQLite, a named
// statement on PostgreSQL, the batch's connection inside a group commit. Nothing is looked up in
// a registry: what runs a statement is the object it is called on.
//
// The executor and the prepared statement it runs are declared together here because each names the
// other; src/db/prepared.ts makes prepared statements and src/db/request-tx.ts joins an open
// request transaction, both building on this file rather than it on them.
import type { CompiledQuery, Kysely, QueryResult, Transaction } from 'kysely';
import type { Database } from './tables.js';

export type DialectName = 'sqlite' | 'postgres';

/** Runs compiled SQL with its parameters and returns the rows (none for a write). */
export type RunSql = <R>(sql: string, parameters: readonly unknown[]) => Promise<R[]>;

export type Builder = Pick<
  Kysely<Database>,
  'selectFrom' | 'insertInto' | 'updateTable' | 'deleteFrom' | 'selectNoFrom' | 'with' | 'fn' | 'getExecutor'
>;

/** A query written once and run with new values on any executor (made by src/db/prepared.ts). */
export interface Prepared<P, R> {
  /** The SQL for `x`'s dialect and its parameter values for `params` (run it with `x.run`). */
  statement(x: Executor, params: P): { sql: string; parameters: unknown[] };
  /** The SQL as compiled for `x`'s dialect (tests, plans). */
  sql(x: Executor): string;
  /** Never set: carries the row type. */
  readonly row?: R;
}

/** The store, or one of its transactions: where a query runs. */
export interface Executor extends Builder {
  readonly dialect: DialectName;
  /** Runs a prepared statement (src/db/prepared.ts) and returns its rows. */
  run<P, R>(q: Prepared<P, R>, params: P): Promise<R[]>;
  /** The first row of `run`, or undefined. */
  first<P, R>(q: Prepared<P, R>, params: P): Promise<R | undefined>;
  /** Runs a query compiled elsewhere (raw SQL through Kysely). */
  executeQuery<R>(query: CompiledQuery<R>): Promise<QueryResult<R>>;
}

/** One transaction of the store (`store.transact`). */
export interface Tx extends Executor {
  /**
   * Calls `fn` once this transaction has committed (a group commit: once the batch holding it
   * committed), never when it rolled back. Listeners run in order; one that throws is logged by
   * nobody and stops nothing, so keep them to waking things up.
   */
  onCommit(fn: () => void): void;
  /**
   * PostgreSQL, outside a request transaction: runs `sql` as the transaction's last statement, sent
   * with its COMMIT in one round trip (the values written into it as literals), so whatever lock it
   * takes is held only while the server runs it and commits; `done` gets its rows once committed,
   * before the onCommit listeners run. At most one per transaction. Undefined where that cannot be
   * done (SQLite, a request transaction): run the statement instead.
   */
  readonly withCommit?: (
    sql: string,
    parameters: readonly unknown[],
    done?: (rows: Record<string, unknown>[]) => void,
  ) => void;
  /**
   * Adds `part` to `kind`'s total, written by the statements `kind` makes just before the COMMIT.
   * For totals many transactions write (report rollups): on PostgreSQL, outside a request
   * transaction, they are sent with the COMMIT in one round trip (values written as literals), so
   * their row locks are held only while the server runs them and commits, never while a reply
   * travels to a busy API process and its next statement back; on SQLite the parts of every
   * transaction of a group commit that stands (one rolled back to its savepoint adds none) are
   * summed and written once, after the last. `part` is read once the transaction's work is done:
   * the caller may keep adding to it until then. Undefined where that cannot be done (a request
   * transaction's savepoint): write at once instead.
   */
  readonly addAtCommit?: <T>(kind: CommitTotal<T>, part: T) => void;
}

/** A total that transactions add to and that is written once, just before their commit (Tx.addAtCommit). */
export interface CommitTotal<T> {
  /** Adds `part` into `total` (a transaction's part into the commit's total). */
  add(total: T, part: T): void;
  /** A new, empty total. */
  empty(): T;
  /** The statements that write `total`, run in the committing transaction before its COMMIT. */
  statements(x: Executor, total: T): { sql: string; parameters: readonly unknown[] }[];
}

/** What transactions added with `addAtCommit`, by kind of total, in the order they were added. */
export type CommitParts = Map<CommitTotal<unknown>, unknown[]>;

/** Adds `parts` into `totals` (a kind's first part is summed into a new total, never kept itself). */
export function addParts(totals: Map<CommitTotal<unknown>, unknown>, parts: CommitParts): void {
  for (const [kind, list] of parts) {
    let total = totals.get(kind);
    if (total === undefined) {
      total = kind.empty();
      totals.set(kind, total);
    }
    for (const part of list) kind.add(total, part);
  }
}

const held = new WeakMap<Executor, Map<CommitTotal<unknown>, unknown>>();

/**
 * The part of `kind`'s total this PostgreSQL transaction holds for its COMMIT (Tx.addAtCommit): one
 * per transaction and kind, made and added on first use, which the transaction goes on reading and
 * changing until it commits (rows it wrote there instead of at once). Undefined where nothing is
 * held: on SQLite, where a later transaction of the same group commit would not see the rows, and
 * in a request transaction.
 */
export function heldForCommit<T>(x: Executor, kind: CommitTotal<T>): T | undefined {
  const later = (x as Partial<Tx>).addAtCommit;
  if (later === undefined || x.dialect !== 'postgres') return undefined;
  let parts = held.get(x);
  if (parts === undefined) {
    parts = new Map();
    held.set(x, parts);
  }
  let part = parts.get(kind) as T | undefined;
  if (part === undefined) {
    part = kind.empty();
    parts.set(kind, part);
    later(kind, part);
  }
  return part;
}

/** What `heldForCommit` made of `kind` for this transaction so far, without making it. */
export function heldSoFar<T>(x: Executor, kind: CommitTotal<T>): T | undefined {
  return held.get(x)?.get(kind) as T | undefined;
}

/** The statements that write `totals`, kind by kind in the order the kinds were first added. */
export function totalStatements(
  x: Executor,
  totals: Map<CommitTotal<unknown>, unknown>,
): { sql: string; parameters: readonly unknown[] }[] {
  return [...totals].flatMap(([kind, total]) => kind.statements(x, total));
}

/** An executor over a Kysely instance or transaction, with `run` executing prepared statements. */
export function executor(db: Kysely<Database> | Transaction<Database>, dialect: DialectName, runSql: RunSql): Executor {
  const x: Executor = {
    dialect,
    // Bound so the builder works when called on the executor; the casts keep Kysely's overloads,
    // which `bind` would collapse to one.
    selectFrom: db.selectFrom.bind(db) as Builder['selectFrom'],
    insertInto: db.insertInto.bind(db) as Builder['insertInto'],
    updateTable: db.updateTable.bind(db) as Builder['updateTable'],
    deleteFrom: db.deleteFrom.bind(db) as Builder['deleteFrom'],
    selectNoFrom: db.selectNoFrom.bind(db) as Builder['selectNoFrom'],
    with: db.with.bind(db) as Builder['with'],
    fn: db.fn,
    getExecutor: () => db.getExecutor(),
    executeQuery: (query) => db.executeQuery(query),
    run: (q, params) => {
      const s = q.statement(x, params);
      return runSql(s.sql, s.parameters);
    },
    first: async (q, params) => (await x.run(q, params))[0],
  };
  return x;
}

/**
 * A transaction's executor, collecting the listeners to call after it commits and, when
 * `atCommit` is given, the parts it adds to totals written at its commit (`parts`).
 */
export function transaction(
  tx: Kysely<Database> | Transaction<Database>,
  dialect: DialectName,
  runSql: RunSql,
  withCommit?: Tx['withCommit'],
  atCommit?: 'totals',
): { tx: Tx; committed(): void; parts: CommitParts } {
  const after: (() => void)[] = [];
  const parts: CommitParts = new Map();
  const handle: Tx = {
    ...executor(tx, dialect, runSql),
    onCommit: (fn) => void after.push(fn),
    withCommit,
    addAtCommit:
      atCommit === undefined
        ? undefined
        : <T>(kind: CommitTotal<T>, part: T) => {
            const k = kind as CommitTotal<unknown>;
            const list = parts.get(k);
            if (list === undefined) parts.set(k, [part]);
            else list.push(part);
          },
  };
  // `run` above calls the base executor, whose statement() needs only the builder and dialect.
  return {
    tx: handle,
    parts,
    committed() {
      for (const fn of after) {
        try {
          fn();
        } catch {
          // A wake-up that failed must not undo or hide the committed work.
        }
      }
    },
  };
}
