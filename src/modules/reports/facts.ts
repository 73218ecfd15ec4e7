// Owns writing figures: each measure that ends becomes a row of report_facts, and the same is
// added to report_rollups (count, wall and business seconds) and report_bins (the histogram of
// each) for its UTC quarter-hour, hour and day, under every combination of its channel, assignee
// and department with '*' (all). Retracting a fact (a target met after all) subtracts it again.
// Everything is written in the caller's transaction, so a figure is exact once that commits.
import { type Compilable, sql } from 'kysely';
import { type Param, type Prepared, prepared } from '../../db/prepared.js';
import type { Executor, Tx } from '../../db/types.js';
import { binOf } from './bins.js';
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

interface RollupDelta {
  metric: string;
  channel: string;
  assignee: string;
  department: string;
  grain: number;
  start: number;
  n: number;
  wall: number;
  biz: number;
}
interface BinDelta {
  metric: string;
  biz: number;
  channel: string;
  assignee: string;
  department: string;
  grain: number;
  start: number;
  bin: number;
  n: number;
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

/**
 * An insert into a summing table (rollups, bins): a row already held at the same `keys` has each
 * of `sums` added to it instead, so writers of one bucket never read it first.
 */
function addingInsert(table: 'report_rollups' | 'report_bins', keys: readonly string[], sums: readonly string[]) {
  const added = Object.fromEntries(
    sums.map((c) => [c, sql`${sql.ref(`${table}.${c}`)} + ${sql.ref(`excluded.${c}`)}`]),
  );
  return rowsInsert([...keys, ...sums], (db, rows) =>
    rdb(db)
      .insertInto(table)
      .values(rows as never)
      .onConflict((oc) => oc.columns(keys as never).doUpdateSet(added as never)),
  );
}

const insertRollups = addingInsert(
  'report_rollups',
  ['metric', 'channel', 'assignee', 'department', 'grain', 'start'],
  ['n', 'wall', 'biz'],
);

const insertBins = addingInsert(
  'report_bins',
  ['metric', 'biz', 'channel', 'assignee', 'department', 'grain', 'start', 'bin'],
  ['n'],
);

const insertFacts = rowsInsert(
  ['metric', 'at', 'channel', 'assignee', 'department', 'wall', 'biz', 'ref'],
  (db, rows) =>
    rdb(db)
      .insertInto('report_facts')
      .values(rows as never),
);

interface Deltas {
  rollups: Map<string, RollupDelta>;
  bins: Map<string, BinDelta>;
}

/** A transaction's deltas waiting for its end (PostgreSQL, `Tx.beforeCommit`). */
const pending = new WeakMap<Executor, Deltas>();

/**
 * Adds (sign 1) or subtracts (sign −1) facts to the rollups. On PostgreSQL outside a request
 * transaction the deltas of the whole transaction are summed and sent with its COMMIT: every
 * conversation opened or message sent in a quarter-hour adds to the same few rows, and a row
 * written before the end stays locked while the API process sends the rest, so concurrent writers
 * (a burst of journey steps, docs/stays.md) would take turns for longer. Elsewhere they are
 * written at once, one statement per table.
 */
async function roll(x: Executor, facts: Fact[], sign: 1 | -1): Promise<void> {
  const late = (x as Partial<Tx>).beforeCommit;
  let deltas = late === undefined ? undefined : pending.get(x);
  if (deltas === undefined) {
    deltas = { rollups: new Map(), bins: new Map() };
    if (late !== undefined) {
      const mine = deltas;
      pending.set(x, mine);
      late(() => deltaStatements(x, mine));
    }
  }
  const { rollups, bins } = deltas;
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
        };
        r.n += sign;
        r.wall += sign * (f.wall ?? 0);
        r.biz += sign * (f.biz ?? 0);
        rollups.set(key, r);
        if (!timed) continue;
        for (const [biz, seconds] of [
          [0, f.wall ?? 0],
          [1, f.biz ?? 0],
        ] as const) {
          const bin = binOf(seconds);
          const bkey = `${key}|${biz}|${bin}`;
          const b = bins.get(bkey) ?? { metric: f.metric, biz, channel, assignee, department, grain, start, bin, n: 0 };
          b.n += sign;
          bins.set(bkey, b);
        }
      }
    }
  }
  if (late === undefined) await writeDeltas(x, deltas);
}

// Sorted, so two transactions touching the same rows lock them in one order (no deadlock).
const sorted = <T>(m: Map<string, T>) =>
  [...m.entries()].sort((a, b) => (a[0] < b[0] ? -1 : 1)).map((e) => e[1]) as unknown as Row[];

/** Writes the deltas, one statement per table. */
async function writeDeltas(x: Executor, { rollups, bins }: Deltas): Promise<void> {
  if (rollups.size > 0) await insertRollups.write(x, sorted(rollups));
  if (bins.size > 0) await insertBins.write(x, sorted(bins));
}

/** The statements that write the deltas, one per table. */
function deltaStatements(x: Executor, { rollups, bins }: Deltas) {
  const out: { sql: string; parameters: readonly unknown[] }[] = [];
  if (rollups.size > 0) out.push(insertRollups.of(x, sorted(rollups)));
  if (bins.size > 0) out.push(insertBins.of(x, sorted(bins)));
  return out;
}

/** Records facts and their rollups in the caller's transaction. */
export async function addFacts(x: Executor, facts: Fact[]): Promise<void> {
  if (facts.length === 0) return;
  await insertFacts.write(
    x,
    facts.map((f) => ({
      metric: f.metric,
      at: f.at,
      channel: f.channel,
      assignee: f.assignee,
      department: f.department,
      wall: f.wall ?? null,
      biz: f.biz ?? null,
      ref: f.ref ?? null,
    })),
  );
  await roll(x, facts, 1);
}

/** Removes the facts of `ref` with one of `metrics` (optionally only those due after `after`). */
export async function retractFacts(x: Executor, ref: string, metrics: Metric[], after?: number): Promise<number> {
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
