// Owns writing figures: each measure that ends becomes a row of report_facts, and the same is
// added to report_rollups (count, wall and business seconds, and the histogram of each, migration
// 033) for its UTC quarter-hour, hour, day, 7-day and 28-day block, under every combination of its
// channel, assignee and department with '*' (all). Retracting a fact (a target met after all)
// subtracts it again.
// Everything is written in the caller's transaction, so a figure is exact once that commits.
import { type Compilable, sql } from 'kysely';
import { type Param, type Prepared, prepared } from '../../db/prepared.js';
import type { CommitTotal, Executor, Tx } from '../../db/types.js';
import { binOf } from './bins.js';
import { type Counts, pgHistogram, sqliteHistogram } from './histogram.js';
import { num, rdb } from './tables.js';

export const CONVERSATION_METRICS = [
  'opened',
  'resolution',
  'inbound',
  'outbound',
  'first_response',
  'reply_time',
  'sla_first_response_met',
  'sla_first_response_breached',
  'sla_next_response_met',
  'sla_next_response_breached',
  'sla_resolution_met',
  'sla_resolution_breached',
] as const;
export const TASK_METRICS = ['task_created', 'task_completed', 'task_overdue', 'sla_tasks_met'] as const;
export type Metric = (typeof CONVERSATION_METRICS)[number] | (typeof TASK_METRICS)[number];

/** Figures with a duration: their seconds are summed and binned. */
export const TIMED = new Set<Metric>(['first_response', 'reply_time', 'resolution', 'task_completed']);
/** Figures counted at a due moment written ahead of time: they count only once it has passed. */
export const SCHEDULED = new Set<Metric>([
  'sla_first_response_breached',
  'sla_next_response_breached',
  'sla_resolution_breached',
  'task_overdue',
]);
export const isTaskMetric = (m: Metric) => (TASK_METRICS as readonly string[]).includes(m);

/**
 * Rollup grains in seconds, each a multiple of the next, aligned to the Unix epoch: 28 and 7 days
 * (so a year is read from a few dozen rows), day, hour and quarter-hour (every zone's offset today
 * is a whole number of quarter-hours, so every local hour and day is a sum of them).
 */
export const GRAINS = [2_419_200, 604_800, 86_400, 3_600, 900] as const;
export const ALL = '*';

export interface Fact {
  metric: Metric;
  /** The moment, epoch ms. */
  at: number;
  channel: string;
  /** Staff id, or '' for none. */
  assignee: string;
  /** Department, or '' (conversation figures have none). */
  department: string;
  wall?: number | null;
  biz?: number | null;
  /** The conversation or task a scheduled fact belongs to, to retract it by. */
  ref?: string | null;
}

/** The dimension combinations a fact is summed under. */
function combos(f: Fact): [string, string, string][] {
  const out: [string, string, string][] = [];
  const departments = isTaskMetric(f.metric) ? [f.department, ALL] : [ALL];
  for (const c of [f.channel, ALL]) for (const a of [f.assignee, ALL]) for (const d of departments) out.push([c, a, d]);
  return out;
}

/** One report_rollups row, or a change to one: a sum of facts at one grain, start and combination. */
export interface RollupRow {
  metric: Metric;
  channel: string;
  assignee: string;
  department: string;
  grain: number;
  start: number;
  n: number;
  wall: number;
  biz: number;
  /** Bin counts of a timed figure's wall and business seconds; null for the others. */
  wallBins: Counts | null;
  bizBins: Counts | null;
}

type Row = Record<string, unknown>;

/**
 * A multi-row insert prepared once per row count (a text writes 20 rollup rows per fact, a task 40):
 * building and compiling such a statement with Kysely on every write cost more than running it.
 * Past MAX_PREPARED_ROWS rows (a large retraction) the statement is built as before.
 */
const MAX_PREPARED_ROWS = 200;

function rowsInsert(columns: readonly string[], build: (db: Executor, rows: Row[]) => Compilable<unknown>) {
  const byCount = new Map<number, Prepared<Row, unknown>>();
  const statement = (n: number): Prepared<Row, unknown> => {
    let q = byCount.get(n);
    if (q === undefined) {
      q = prepared((db, p: Param<Row>) =>
        build(
          db,
          Array.from({ length: n }, (_, i) => Object.fromEntries(columns.map((c) => [c, p(`${c}${i}`)]))),
        ),
      );
      byCount.set(n, q);
    }
    return q;
  };
  const paramsOf = (rows: Row[]): Row => {
    const params: Row = {};
    rows.forEach((r, i) => {
      for (const c of columns) params[`${c}${i}`] = r[c];
    });
    return params;
  };
  return {
    /** Writes `rows` on `x` now. */
    write: async (x: Executor, rows: Row[]): Promise<void> => {
      if (rows.length > MAX_PREPARED_ROWS) await x.executeQuery(build(x, rows).compile());
      else await x.run(statement(rows.length), paramsOf(rows));
    },
    /** The statement that writes `rows` on `x`, with its values (to send with a commit). */
    of: (x: Executor, rows: Row[]): { sql: string; parameters: readonly unknown[] } =>
      rows.length > MAX_PREPARED_ROWS ? build(x, rows).compile() : statement(rows.length).statement(x, paramsOf(rows)),
  };
}

/** A histogram column added to: left alone by a row without bins (no function call for it). */
const addBins = (column: 'wall_bins' | 'biz_bins') =>
  sql<Uint8Array | string | null>`case when excluded.${sql.ref(column)} is null then report_rollups.${sql.ref(column)}
    else report_hist_add(report_rollups.${sql.ref(column)}, excluded.${sql.ref(column)}) end`;

// A row already held at the same keys has the counts, sums and histograms added to it instead,
// so writers of one bucket never read it first.
const insertRollups = rowsInsert(
  ['metric', 'channel', 'assignee', 'department', 'grain', 'start', 'n', 'wall', 'biz', 'wall_bins', 'biz_bins'],
  (db, rows) =>
    rdb(db)
      .insertInto('report_rollups')
      .values(rows as never)
      .onConflict((oc) =>
        oc.columns(['metric', 'channel', 'assignee', 'department', 'grain', 'start']).doUpdateSet({
          n: sql`report_rollups.n + excluded.n`,
          wall: sql`report_rollups.wall + excluded.wall`,
          biz: sql`report_rollups.biz + excluded.biz`,
          wall_bins: addBins('wall_bins'),
          biz_bins: addBins('biz_bins'),
        }),
      ),
);

const insertFacts = rowsInsert(
  ['metric', 'at', 'channel', 'assignee', 'department', 'wall', 'biz', 'ref'],
  (db, rows) =>
    rdb(db)
      .insertInto('report_facts')
      .values(rows as never),
);

interface Deltas {
  rollups: Map<string, RollupRow>;
}

/** A transaction's deltas waiting for its commit (`Tx.addAtCommit`). */
const pending = new WeakMap<Executor, Deltas>();

/** Counts added bin by bin into `into`. */
function addCounts(into: Counts, part: Counts): void {
  for (const [bin, n] of part) into.set(bin, (into.get(bin) ?? 0) + n);
}

/** The rollup changes of the transactions that commit together, summed row by row. */
const ROLLUPS: CommitTotal<Deltas> = {
  empty: () => ({ rollups: new Map() }),
  add(total, part) {
    for (const [key, r] of part.rollups) {
      const t = total.rollups.get(key);
      if (t === undefined) {
        total.rollups.set(key, {
          ...r,
          wallBins: r.wallBins === null ? null : new Map(r.wallBins),
          bizBins: r.bizBins === null ? null : new Map(r.bizBins),
        });
        continue;
      }
      t.n += r.n;
      t.wall += r.wall;
      t.biz += r.biz;
      if (t.wallBins !== null && r.wallBins !== null) addCounts(t.wallBins, r.wallBins);
      if (t.bizBins !== null && r.bizBins !== null) addCounts(t.bizBins, r.bizBins);
    }
  },
  statements: (x, total) => deltaStatements(x, total),
};

/**
 * Adds (sign 1) or subtracts (sign −1) facts to the rollups. In a transaction that can, the
 * deltas are summed and written just before its commit (`Tx.addAtCommit`): every conversation
 * opened or message sent in a quarter-hour adds to the same few rows, so on SQLite the requests of
 * one group commit write each row once, and on PostgreSQL a row stays locked only while the COMMIT
 * runs, not while the API process sends the rest of the transaction (a burst of journey steps,
 * docs/stays.md). Elsewhere they are written at once, one statement per table.
 */
async function roll(x: Executor, facts: Fact[], sign: 1 | -1): Promise<void> {
  const later = (x as Partial<Tx>).addAtCommit;
  let deltas = later === undefined ? undefined : pending.get(x);
  if (deltas === undefined) {
    deltas = ROLLUPS.empty();
    if (later !== undefined) {
      pending.set(x, deltas);
      later(ROLLUPS, deltas);
    }
  }
  const { rollups } = deltas;
  for (const f of facts) {
    const timed = TIMED.has(f.metric);
    for (const grain of GRAINS) {
      const start = Math.floor(f.at / 1000 / grain) * grain;
      for (const [channel, assignee, department] of combos(f)) {
        const key = `${f.metric}|${channel}|${assignee}|${department}|${grain}|${start}`;
        const r = rollups.get(key) ?? {
          metric: f.metric,
          channel,
          assignee,
          department,
          grain,
          start,
          n: 0,
          wall: 0,
          biz: 0,
          wallBins: timed ? new Map() : null,
          bizBins: timed ? new Map() : null,
        };
        r.n += sign;
        r.wall += sign * (f.wall ?? 0);
        r.biz += sign * (f.biz ?? 0);
        rollups.set(key, r);
        if (r.wallBins === null || r.bizBins === null) continue;
        const w = binOf(f.wall ?? 0);
        const b = binOf(f.biz ?? 0);
        r.wallBins.set(w, (r.wallBins.get(w) ?? 0) + sign);
        r.bizBins.set(b, (r.bizBins.get(b) ?? 0) + sign);
      }
    }
  }
  if (later === undefined) await writeDeltas(x, deltas);
}

/** The deltas' rows, sorted: two transactions touching the same rows lock them in one order (no deadlock). */
function deltaRows(x: Executor, { rollups }: Deltas): Row[] {
  const histogram = (c: Counts | null) =>
    c === null || c.size === 0 ? null : x.dialect === 'postgres' ? pgHistogram(c) : sqliteHistogram(c);
  return [...rollups.entries()]
    .sort((a, b) => (a[0] < b[0] ? -1 : 1))
    .map(([, r]) => ({
      metric: r.metric,
      channel: r.channel,
      assignee: r.assignee,
      department: r.department,
      grain: r.grain,
      start: r.start,
      n: r.n,
      wall: r.wall,
      biz: r.biz,
      wall_bins: histogram(r.wallBins),
      biz_bins: histogram(r.bizBins),
    })) as unknown as Row[];
}

/** Rows per statement: a group commit's total can hold hundreds; each row count is one prepared statement. */
const ROWS_PER_STATEMENT = 100;

/** The deltas' rows in statements of at most ROWS_PER_STATEMENT rows. */
function chunks(x: Executor, deltas: Deltas): Row[][] {
  const rows = deltaRows(x, deltas);
  const out: Row[][] = [];
  for (let i = 0; i < rows.length; i += ROWS_PER_STATEMENT) out.push(rows.slice(i, i + ROWS_PER_STATEMENT));
  return out;
}

/** Writes the deltas now. */
async function writeDeltas(x: Executor, deltas: Deltas): Promise<void> {
  for (const rows of chunks(x, deltas)) await insertRollups.write(x, rows);
}

/** The statements that write the deltas (none when there are none). */
function deltaStatements(x: Executor, deltas: Deltas) {
  return chunks(x, deltas).map((rows) => insertRollups.of(x, rows));
}

/**
 * The facts a PostgreSQL transaction added, written in one statement sent with its COMMIT, as its
 * rollups are: one round trip less for each write that ends a measure (a journey step writes two).
 * Not on SQLite: a later transaction of the same group commit could retract a fact that an earlier
 * one still held. Nothing else in a transaction reads the facts it adds.
 */
const FACTS: CommitTotal<Row[]> = {
  empty: () => [],
  add(total, part) {
    total.push(...part);
  },
  statements: (x, total) => {
    const out = [];
    for (let i = 0; i < total.length; i += ROWS_PER_STATEMENT) {
      out.push(insertFacts.of(x, total.slice(i, i + ROWS_PER_STATEMENT)));
    }
    return out;
  },
};

/** A PostgreSQL transaction's facts held for its COMMIT. */
const heldFacts = new WeakMap<Executor, Row[]>();

/** Records facts and their rollups in the caller's transaction. */
export async function addFacts(x: Executor, facts: Fact[]): Promise<void> {
  if (facts.length === 0) return;
  const rows = facts.map((f) => ({
    metric: f.metric,
    at: f.at,
    channel: f.channel,
    assignee: f.assignee,
    department: f.department,
    wall: f.wall ?? null,
    biz: f.biz ?? null,
    ref: f.ref ?? null,
  }));
  const later = (x as Partial<Tx>).addAtCommit;
  if (later === undefined || x.dialect !== 'postgres') await insertFacts.write(x, rows);
  else {
    let held = heldFacts.get(x);
    if (held === undefined) {
      held = [];
      heldFacts.set(x, held);
      later(FACTS, held);
    }
    held.push(...rows);
  }
  await roll(x, facts, 1);
}

/** Writes the facts this transaction holds for its COMMIT now, so that a delete sees them. */
async function writeHeldFacts(x: Executor): Promise<void> {
  const held = heldFacts.get(x);
  if (held !== undefined && held.length > 0) await insertFacts.write(x, held.splice(0));
}

/** Removes the facts of `ref` with one of `metrics` (optionally only those due after `after`). */
export async function retractFacts(x: Executor, ref: string, metrics: Metric[], after?: number): Promise<number> {
  await writeHeldFacts(x);
  let q = rdb(x).deleteFrom('report_facts').where('ref', '=', ref).where('metric', 'in', metrics);
  if (after !== undefined) q = q.where('at', '>', after);
  const gone = await q.returning(['metric', 'at', 'channel', 'assignee', 'department', 'wall', 'biz', 'ref']).execute();
  await roll(
    x,
    gone.map((g) => ({ ...g, metric: g.metric as Metric, at: num(g.at)! })),
    -1,
  );
  return gone.length;
}
