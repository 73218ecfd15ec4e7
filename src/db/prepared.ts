// Owns prepared hot queries: a query is written once with Kysely's builder, compiled once per
// dialect with placeholders for its inputs, and then run with new values without being built or
// compiled again (building and compiling was ~20 % of a list request, docs/performance.md). A
// prepared query only describes a statement; the executor it is run on (`x.run(q, params)`,
// src/db/executor.ts) decides how: on the store, at once on a cached prepared statement (SQLite)
// or as a named statement parsed and planned once per connection (PostgreSQL); in a transaction,
// on its connection.
import { type Compilable, type SelectQueryBuilder, sql } from 'kysely';
import type { DialectName, Executor, Prepared } from './executor.js';

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
