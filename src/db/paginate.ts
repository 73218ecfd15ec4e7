// Owns the one list primitive every paginated route uses: a list is described once (its table,
// filters, row columns, order and count) and `paginate` answers a numbered page or a cursor page
// of it, at a cost that does not grow with depth (docs/decisions.md, Requests and responses):
// - the first page reads its rows and carries the total in the same statement;
// - a deeper page reads only the ordering index up to its offset and the rows of the page alone
//   (a deferred join), and reads nothing at all when the offset is past the total;
// - a cursor page seeks to the last row of the page before it (keyset), so it costs the same at
//   any depth and sees each row that did not move exactly once.
// Statements are prepared per filter shape (`shapeOf`); a list whose filter cannot be expressed
// with placeholders (a search term inside a pattern) returns null and is compiled per request.
import { type Expression, type SelectQueryBuilder, sql } from 'kysely';
import type { Executor } from './executor.js';
import { type Param, type Prepared, prepared, preparedPage } from './prepared.js';

/** Values of a page query's inputs; the list's own filter values plus these. */
export type PageInputs = Record<string, unknown> & { limit: number; offset: number; k0: unknown; k1: unknown };

// Kysely's builders are generic over the tables in scope; the primitive composes the list's own
// builders without naming their types, so it handles them under this one shape.
// biome-ignore lint/suspicious/noExplicitAny: the tables in scope are the list's, unknown here
type AnyQuery = SelectQueryBuilder<any, any, any>;

/** What a list's table is selected from: the executor, or a statement's WITH in front of it. */
export type From = Pick<Executor, 'selectFrom' | 'dialect'>;

/** A placeholder for a filter value (any column's type: the value is bound when the page is read). */
export type ListParam = (name: string) => never;

export interface ListSpec<F, R> {
  /** Names the list: a cursor of one list is refused by another. */
  readonly name: string;
  /**
   * The list's table, aliased as its order columns name it (`conversations as c`). A list kept in
   * a table of its own per owner (a staff member's guests) narrows it here, so the deferred join's
   * outer read, which is not narrowed again, meets each row once.
   */
  from(db: From, f: F, p: ListParam): AnyQuery;
  /** `q` narrowed by the filter, each value a placeholder `p(name)`. */
  where(q: AnyQuery, f: F, p: ListParam, db: Pick<Executor, 'selectFrom'>): AnyQuery;
  /**
   * The joins and columns of a row (its fields are R's), added to `q` (the table, narrowed or not);
   * a column may take an input of the filter's values (`p`), as a filter does, and be written in
   * the dialect's own SQL.
   */
  columns(q: AnyQuery, p: ListParam, dialect: From['dialect']): AnyQuery;
  /** The order: a column, then the unique id that breaks its ties, both one direction. */
  readonly order: readonly [string, string];
  readonly direction: 'asc' | 'desc';
  /** The two order values of a row, as the cursor carries them. */
  keyOf(row: R): [string | number, string];
  /** The number of rows the filter matches, as `n`. */
  count(x: From, f: F, p: ListParam): AnyQuery;
  /**
   * Rows worked out once per statement and read as the table `list_base` (a materialized CTE),
   * for a list whose rows come out of an expensive match (a member's search): its page and its
   * total then share one evaluation. Such a list's first page is read as a deep one (its keys
   * sorted from `list_base`, the rows of the page alone looked up).
   */
  base?(f: F, p: ListParam): Expression<Record<string, unknown>>;
  /** Which placeholders the filter uses, as a key for its prepared statements; null: compile each time. */
  shapeOf(f: F): string | null;
  /** The filter's values by placeholder name. */
  values(f: F): Record<string, unknown>;
  /**
   * Ranked results (a search's relevance order): numbered pages only, read with their total in
   * one statement at any offset; no cursor (a cursor is a 400).
   */
  readonly ranked?: boolean;
}

/** A numbered page, or the rows after a cursor's key. */
export type PageRequest = { page: number; limit: number } | { after: readonly [unknown, unknown]; limit: number };

export interface PageResult<R> {
  rows: R[];
  /** Null for a cursor page, which never counts. */
  total: number | null;
  /** The order values of the last row when another page follows it, else null. */
  next: [string | number, string] | null;
}

/** What a list's statements are built on: the executor, or a `with` in front of it. */
type Root = From & Pick<Executor, 'with'>;

/** The column a first page carries its total in. */
const TOTAL = 'list_total';
/** The column the deep page's keys are read under. */
const KEY = 'list_key';

interface Statements {
  first: Prepared<PageInputs, Record<string, unknown>>;
  deep: Prepared<PageInputs, Record<string, unknown>>;
  after: Prepared<PageInputs, Record<string, unknown>>;
  count: Prepared<PageInputs, { n: number | string | bigint }>;
}

function statements<F, R>(spec: ListSpec<F, R>, f: F): Statements {
  const [col, id] = spec.order;
  const dir = spec.direction;
  const ordered = (q: AnyQuery) => q.orderBy(col, dir).orderBy(id, dir);
  /** The statement's root: the executor, or under `with list_base` for a list with a base. */
  const root = (x: Executor, p: Param<PageInputs>): Root => {
    if (spec.base === undefined) return x;
    const w = x.with(
      (cte) => cte('list_base').materialized(),
      () => spec.base!(f, p as ListParam),
    );
    return Object.assign(w, { dialect: x.dialect }) as unknown as Root;
  };
  const narrowed = (x: Root, p: Param<PageInputs>) => spec.where(spec.from(x, f, p as ListParam), f, p as ListParam, x);
  /** Selects from under `with page_total`: the list's total, computed once, as `n`. */
  const withTotal = (x: Root, p: Param<PageInputs>): From => {
    // The count is built on a plain creator: a `with list_base` of the root is the statement's own.
    const w = x.with(
      (cte) => cte('page_total').materialized(),
      (qc) =>
        spec.count({ selectFrom: qc.selectFrom.bind(qc) as From['selectFrom'], dialect: x.dialect }, f, p as ListParam),
    );
    return { selectFrom: w.selectFrom.bind(w) as From['selectFrom'], dialect: x.dialect };
  };
  // A ranked list's match (a full-text search) is its cost: the page and its total are read in one
  // pass over it, the total counted by a window over the matches before the page is cut from them,
  // rather than the match run a second time for a count.
  const rankedFirst = prepared((x, p) =>
    ordered(spec.columns(narrowed(root(x, p), p), p as ListParam, x.dialect))
      .select(sql<number>`count(*) over ()`.as(TOTAL))
      .limit(p('limit'))
      .offset(p('offset')),
  ) as Statements['first'];
  return {
    // One statement: the page and its total (a scalar subquery, evaluated once), one snapshot.
    // On SQLite the total also bounds the read: no more rows than remain past the offset, so a
    // filter matching few rows (or none) stops its scan at the last of them instead of reading
    // the rest of the index it walks. (PostgreSQL plans a LIMIT it cannot read as a tenth of the
    // table; its pages keep their written-in limit, see preparedPage.)
    first: spec.ranked
      ? rankedFirst
      : (byDialect(
          prepared((x, p) => {
            const db = withTotal(root(x, p), p);
            return ordered(
              spec.columns(
                spec.where(spec.from(db, f, p as ListParam), f, p as ListParam, x),
                p as ListParam,
                x.dialect,
              ),
            )
              .select(sql<number>`(select n from page_total)`.as(TOTAL))
              .limit(sql<number>`min(${p('limit')}, max((select n from page_total) - ${p('offset')}, 0))`)
              .offset(p('offset'));
          }),
          preparedPage((x, p) => {
            return ordered(spec.columns(narrowed(root(x, p), p), p as ListParam, x.dialect)).select(
              spec.count(x, f, p as ListParam).as(TOTAL),
            );
          }),
        ) as Statements['first']),
    // The ids of the page from the ordering index alone, up to the offset; then the rows of those
    // ids only (a deferred join). The total is a CTE read twice: carried in each row, and checked
    // before the index is read, so an offset past it reads no entry at all. Where the check sits
    // is the dialect's: SQLite evaluates a WHERE term once per row it scans (a page past the end
    // still stepped over every index entry to find none), while a LIMIT of 0 ends its scan before
    // the first step; PostgreSQL runs the WHERE term once (a one-time filter), but cannot estimate
    // a LIMIT that is an expression and then plans the join as if the page were a tenth of the table.
    deep: prepared((x, p) => {
      // Subqueries are built on the executor: the statement's `with` clauses are its own.
      const ids = ordered(narrowed(x, p).select(`${id} as ${KEY}`));
      const keys = (
        x.dialect === 'sqlite'
          ? ids.limit(sql<number>`case when (select n from page_total) > ${p('offset')} then ${p('limit')} else 0 end`)
          : ids.where(sql<boolean>`(select n from page_total) > ${p('offset')}`).limit(p('limit'))
      ).offset(p('offset'));
      // The page's keys drive the read (CROSS JOIN keeps SQLite from reordering it): each row is
      // one lookup by id, where `id IN (keys)` let SQLite read the list's own order index instead,
      // testing every entry up to the offset, to spare sorting the page.
      const total = withTotal(root(x, p), p);
      const db: From = {
        selectFrom: ((table: never) => total.selectFrom(keys.as('k')).crossJoin(table)) as From['selectFrom'],
        dialect: x.dialect,
      };
      return ordered(
        spec
          .columns(spec.from(db, f, p as ListParam), p as ListParam, x.dialect)
          .whereRef(id, '=', `k.${KEY}`)
          .select(sql<number>`(select n from page_total)`.as(TOTAL)),
      );
    }) as Statements['deep'],
    // Rows strictly after the cursor's key in the list's order; one more than asked says whether
    // another page follows.
    after: prepared((x, p) =>
      ordered(
        spec
          .columns(narrowed(root(x, p), p), p as ListParam, x.dialect)
          .where(
            sql<boolean>`(${sql.ref(col)}, ${sql.ref(id)}) ${sql.raw(dir === 'desc' ? '<' : '>')} (${p('k0')}, ${p('k1')})`,
          ),
      ).limit(p('limit')),
    ) as Statements['after'],
    count: prepared((x, p) => spec.count(root(x, p), f, p as ListParam)) as Statements['count'],
  };
}

/** One statement for SQLite, another for PostgreSQL. */
function byDialect<P, R>(sqlite: Prepared<P, R>, postgres: Prepared<P, R>): Prepared<P, R> {
  const of = (x: Pick<Executor, 'dialect'>) => (x.dialect === 'sqlite' ? sqlite : postgres);
  return { statement: (x, params) => of(x).statement(x, params), sql: (x) => of(x).sql(x) };
}

/** A list's statements per filter shape, and the function that answers its pages. */
export function paginate<F, R>(spec: ListSpec<F, R>) {
  const shapes = new Map<string, Statements>();
  const of = (f: F): Statements => {
    const key = spec.shapeOf(f);
    if (key === null) return statements(spec, f);
    let s = shapes.get(key);
    if (s === undefined) {
      s = statements(spec, f);
      shapes.set(key, s);
    }
    return s;
  };
  const read = async (x: Executor, f: F, req: PageRequest): Promise<PageResult<R>> => {
    const s = of(f);
    const inputs: PageInputs = { ...spec.values(f), limit: req.limit, offset: 0, k0: '', k1: '' };
    if ('after' in req) {
      if (spec.ranked) throw new Error(`paginate: ${spec.name} is ranked and has no cursor`);
      const rows = (await x.run(s.after, {
        ...inputs,
        limit: req.limit + 1,
        k0: req.after[0],
        k1: req.after[1],
      })) as R[];
      const more = rows.length > req.limit;
      if (more) rows.length = req.limit;
      return { rows, total: null, next: more ? spec.keyOf(rows[rows.length - 1]!) : null };
    }
    const offset = (req.page - 1) * req.limit;
    const first = (offset === 0 && spec.base === undefined) || spec.ranked;
    const raw = await x.run(first ? s.first : s.deep, { ...inputs, offset });
    let total: number;
    if (raw.length > 0) total = Number(raw[0]![TOTAL]);
    else total = Number((await x.first(s.count, inputs))?.n ?? 0);
    const rows = raw as R[];
    const more = !spec.ranked && offset + rows.length < total && rows.length > 0;
    return { rows, total, next: more ? spec.keyOf(rows[rows.length - 1]!) : null };
  };
  /** The statements of a filter's shape, by what they answer (SQL review, plans, tests). */
  const statementsOf = (f: F): Readonly<Statements> => of(f);
  return Object.assign(read, { spec, statementsOf });
}
