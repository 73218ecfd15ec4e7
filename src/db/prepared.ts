// Owns prepared hot queries: a query is written once with Kysely's builder, compiled once per store
// with placeholders for its inputs, and then run with new values without being built or compiled
// again (building and compiling was ~20 % of a list request, docs/performance.md). Outside a
// transaction it takes the store's fast path: on SQLite the connection's cached prepared
// statement, run at once; on PostgreSQL a named prepared statement, parsed and planned once per
// connection. Inside a transaction it runs through that transaction like any Kysely query, or on
// the transaction's own fast path when it has one (SQLite group commit).
import { type Compilable, CompiledQuery, type SelectQueryBuilder, sql } from 'kysely';
import type { DbOrTx } from './types.js';

/** Runs compiled SQL on the root instance, outside any transaction. */
export type FastQuery = <R>(sql: string, parameters: readonly unknown[]) => Promise<R[]>;

const fastPaths = new WeakMap<object, FastQuery>();

/**
 * Called by the store for its root Kysely instance, and by the group committer for the transaction
 * of each batch: every statement of the batch then runs at once on the connection the transaction
 * holds, without Kysely's per-query machinery (docs/performance.md).
 */
export function registerFastPath(db: object, run: FastQuery): void {
  fastPaths.set(db, run);
}

/** A placeholder value no caller could pass: NUL never reaches the store (src/plugins/input.ts). */
const MARK = '\u0000param:';

type Slot = { name: string } | { value: unknown };
interface Template {
  sql: string;
  slots: Slot[];
}

export interface Prepared<P, R> {
  all(db: DbOrTx, params: P): Promise<R[]>;
  first(db: DbOrTx, params: P): Promise<R | undefined>;
  /** The SQL as compiled for `db`'s dialect (tests, plans). */
  sql(db: DbOrTx): string;
}

export type Param<P> = <K extends keyof P & string>(name: K) => P[K];

/**
 * `build(db, p)` writes the query; `p('name')` stands for the input called `name` wherever a value
 * goes (comparisons, limit, offset). Every other value in it is a constant. Fails on first use if
 * the compiler dropped an input (it could not be bound then).
 */
export function prepared<P extends Record<string, unknown>, R>(
  build: (db: DbOrTx, p: Param<P>) => Compilable<R>,
): Prepared<P, R> {
  // Per dialect adapter, i.e. per store: tests open many stores of both kinds in one process.
  const templates = new WeakMap<object, Template>();
  const template = (db: DbOrTx): Template => {
    const adapter = db.getExecutor().adapter;
    let t = templates.get(adapter);
    if (t === undefined) {
      const used = new Set<string>();
      const compiled = build(db, (name) => {
        used.add(name);
        return `${MARK}${name}` as never;
      }).compile();
      const slots: Slot[] = compiled.parameters.map((v) =>
        typeof v === 'string' && v.startsWith(MARK) ? { name: v.slice(MARK.length) } : { value: v },
      );
      for (const name of used) {
        if (!slots.some((s) => 'name' in s && s.name === name)) {
          throw new Error(`prepared: input "${name}" is not bound in: ${compiled.sql}`);
        }
      }
      t = { sql: compiled.sql, slots };
      templates.set(adapter, t);
    }
    return t;
  };
  const all = async (db: DbOrTx, params: P): Promise<R[]> => {
    const t = template(db);
    const values = t.slots.map((s) => ('name' in s ? params[s.name] : s.value));
    // The root instance's path (it defers to Kysely while a transaction holds the connection), or
    // the path of a transaction that registered one (a group commit's batch on SQLite).
    const fast = fastPaths.get(db);
    if (fast !== undefined) return fast<R>(t.sql, values);
    return (await db.executeQuery<R>(CompiledQuery.raw(t.sql, values))).rows;
  };
  return {
    all,
    async first(db, params) {
      return (await all(db, params))[0];
    },
    sql: (db) => template(db).sql,
  };
}

/** The inputs of a page: how many rows, after how many. */
export type PageParams = Record<string, unknown> & {
  limit: number;
  offset: number;
};

/** Distinct limits whose first page gets a statement of its own, per page query. */
const FIRST_PAGE_LIMITS = 4;

/**
 * A page query (`build` without its LIMIT and OFFSET), prepared as `prepared` does, except that the
 * first page of a limit in use is a statement of its own with the limit written in and no offset.
 * PostgreSQL costs a generic plan whose LIMIT and OFFSET are parameters as if it returned 10 % of
 * the rows, finds it dearer than a custom plan, and so plans the statement again on every request:
 * 0.41 of the conversation list's 0.55 ms there (docs/performance.md). With the numbers written in,
 * the generic plan costs what the custom one does and it is kept. The first few limits seen get
 * their statements (clients keep to one or two); later pages and other limits take the
 * parameterised one.
 */
export function preparedPage<P extends PageParams, R, DB, TB extends keyof DB>(
  build: (db: DbOrTx, p: Param<P>) => SelectQueryBuilder<DB, TB, R>,
): Prepared<P, R> {
  const any = prepared<P, R>((db, p) => build(db, p).limit(p('limit')).offset(p('offset')));
  const firstPages = new Map<number, Prepared<P, R>>();
  const pick = (params: P): Prepared<P, R> => {
    if (params.offset !== 0) return any;
    let first = firstPages.get(params.limit);
    if (first === undefined) {
      if (firstPages.size >= FIRST_PAGE_LIMITS || !Number.isSafeInteger(params.limit)) return any;
      first = prepared<P, R>((db, p) => build(db, p).limit(sql.lit(params.limit)));
      firstPages.set(params.limit, first);
    }
    return first;
  };
  return {
    all: (db, params) => pick(params).all(db, params),
    first: (db, params) => pick(params).first(db, params),
    sql: (db) => any.sql(db),
  };
}

/** The column a list's page carries its total in (the count as a scalar subquery). */
const TOTAL = 'list_total';

/**
 * A filtered list: for each filter shape (which filters a request has; `shapeOf` names it), its
 * page query (`preparedPage`) carrying the count as a scalar subquery in a column of every row,
 * prepared once. One statement, so the page and its total come from the same snapshot, and on
 * PostgreSQL one round trip instead of two queries on two pool connections (each Bind/Execute a
 * socket write and a wake-up of a backend; docs/performance.md). The subquery does not depend on
 * the row, so both stores evaluate it once. A page with no rows carries no total: only then is the
 * count run alone (a page past the end, or nothing matches).
 */
export function filteredList<F, P extends PageParams, R, DB, TB extends keyof DB, CDB, CTB extends keyof CDB>(
  shapeOf: (f: F) => string,
  page: (db: DbOrTx, f: F, p: Param<P>) => SelectQueryBuilder<DB, TB, R>,
  count: (db: DbOrTx, f: F, p: Param<P>) => SelectQueryBuilder<CDB, CTB, { n: number }>,
) {
  type Row = R & { [TOTAL]: number | string | bigint };
  const shapes = new Map<string, { page: Prepared<P, Row>; count: Prepared<P, { n: number }> }>();
  return async (db: DbOrTx, f: F, params: P): Promise<{ rows: R[]; total: number }> => {
    const key = shapeOf(f);
    let q = shapes.get(key);
    if (q === undefined) {
      q = {
        page: preparedPage((on, p: Param<P>) =>
          page(on, f, p).select(() => count(on, f, p).as(TOTAL) as never),
        ) as Prepared<P, Row>,
        count: prepared((on, p: Param<P>) => count(on, f, p)),
      };
      shapes.set(key, q);
    }
    const rows = await q.page.all(db, params);
    if (rows.length > 0) return { rows, total: Number(rows[0]![TOTAL]) };
    const n = await q.count.first(db, params);
    return { rows, total: Number(n?.n ?? 0) };
  };
}
