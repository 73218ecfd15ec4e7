// Owns prepared hot queries: a query is written once with Kysely's builder, compiled once per
// dialect with placeholders for its inputs, and then run with new values without being built or
// compiled again (building and compiling was ~20 % of a list request, docs/performance.md). A
// prepared query only describes a statement; the executor it is run on (`x.run(q, params)`,
// src/db/executor.ts) decides how: on the store, at once on a cached prepared statement (SQLite)
// or as a named statement parsed and planned once per connection (PostgreSQL); in a transaction,
// on its connection.
import { type Compilable, type SelectQueryBuilder, sql, type Updateable } from 'kysely';
import type { DialectName, Executor, Prepared } from './executor.js';
import type { Database } from './tables.js';

/** A placeholder value no caller could pass: NUL never reaches the store (src/plugins/input.ts). */
const MARK = '\u0000param:';

type Slot = { name: string } | { value: unknown };
interface Template {
  sql: string;
  slots: Slot[];
}

// Declared beside the executor that runs it; callers keep importing it from here.
export type { Prepared };

export type Param<P> = <K extends keyof P & string>(name: K) => P[K];

/**
 * `build(db, p)` writes the query; `p('name')` stands for the input called `name` wherever a value
 * goes (comparisons, limit, offset). Every other value in it is a constant. Fails on first use if
 * the compiler dropped an input (it could not be bound then).
 */
export function prepared<P extends Record<string, unknown>, R>(
  build: (db: Executor, p: Param<P>) => Compilable<R>,
): Prepared<P, R> {
  // Per dialect: the SQL depends on nothing else, and tests open stores of both kinds in one process.
  const templates = new Map<DialectName, Template>();
  const template = (x: Executor): Template => {
    let t = templates.get(x.dialect);
    if (t === undefined) {
      const used = new Set<string>();
      const compiled = build(x, (name) => {
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
      templates.set(x.dialect, t);
    }
    return t;
  };
  return {
    statement(x, params) {
      const t = template(x);
      return { sql: t.sql, parameters: t.slots.map((s) => ('name' in s ? params[s.name] : s.value)) };
    },
    sql: (x) => template(x).sql,
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
 * most of the conversation list's time there (docs/performance.md). With the numbers written in,
 * the generic plan costs what the custom one does and it is kept. The first few limits seen get
 * their statements (clients keep to one or two); later pages and other limits take the
 * parameterised one.
 */
export function preparedPage<P extends PageParams, R, DB, TB extends keyof DB>(
  build: (db: Executor, p: Param<P>) => SelectQueryBuilder<DB, TB, R>,
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
    statement: (x, params) => pick(params).statement(x, params),
    sql: (x) => any.sql(x),
  };
}

/** The row type of a prepared query. */
export type RowOf<Q> = Q extends Prepared<never, infer R> ? R : never;

/**
 * A query whose text depends on a small shape of its inputs (which columns an update writes, how
 * many ids a list holds), prepared as `prepared` does once per shape: the same few shapes come
 * again and again. Past `max` shapes a new one is built and compiled each time, as a query that is
 * not prepared is.
 */
export function preparedByShape<S, P extends Record<string, unknown>, R>(
  keyOf: (shape: S) => string,
  build: (db: Executor, p: Param<P>, shape: S) => Compilable<R>,
  max = 64,
): (shape: S) => Prepared<P, R> {
  const byShape = new Map<string, Prepared<P, R>>();
  return (shape) => {
    const key = keyOf(shape);
    let q = byShape.get(key);
    if (q === undefined) {
      q = prepared<P, R>((db, p) => build(db, p, shape));
      if (byShape.size < max) byShape.set(key, q);
    }
    return q;
  };
}

type Values = Record<string, unknown>;
const setStatement = preparedByShape(
  (s: { table: string; columns: readonly string[]; returning: readonly string[] }) =>
    `${s.table}:${s.columns.join(',')}:${s.returning.join(',')}`,
  (db, p: Param<Values>, s) => {
    const q = db
      .updateTable(s.table as never)
      .set(Object.fromEntries(s.columns.map((c) => [c, p(`set_${c}`)])) as never)
      .where('id' as never, '=', p('id') as never);
    return s.returning.length === 0 ? q : q.returning(s.returning as never);
  },
);

/**
 * Writes `values` (plain values, no SQL expressions; undefined ones are left out) to the row of
 * `table` with this id, prepared per set of columns (a PATCH writes the fields it was given), and
 * returns the `returning` columns of the row written (none when it does not exist).
 */
export async function updateRowById(
  x: Executor,
  table: string,
  id: string,
  values: Values,
  returning: readonly string[] = [],
): Promise<Values[]> {
  const columns = Object.keys(values).filter((c) => values[c] !== undefined);
  const params: Values = { id };
  for (const c of columns) params[`set_${c}`] = values[c];
  return x.run(setStatement({ table, columns, returning }), params) as Promise<Values[]>;
}

/** `updateRowById` for the API's own tables, with their column types. */
export async function updateById<T extends keyof Database & string>(
  x: Executor,
  table: T,
  id: string,
  values: Updateable<Database[T]>,
): Promise<void> {
  await updateRowById(x, table, id, values as Values);
}
