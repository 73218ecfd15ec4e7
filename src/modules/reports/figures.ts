// Owns reading figures back: for each requested range (a period, or each bucket of a time
// series) and each metric, the count, summed seconds and histogram, from the rollup rows that
// cover the range (src/modules/reports/cover.ts; each holds its histogram, migration 033) plus the
// facts at its unaligned edges. Every rollup row of a read comes from one statement, and its
// histogram is added bin by bin into a typed array; when few enough durations are involved they
// are read one by one, so medians and p90s are exact.
import { sql } from 'kysely';
import type { Executor } from '../../db/types.js';
import { binOf } from './bins.js';
import { cover } from './cover.js';
import { ALL, isTaskMetric, type Metric, TIMED } from './facts.js';
import { addHistogram, fit } from './histogram.js';
import { num } from './tables.js';

export type Dimension = 'channel' | 'assignee' | 'department';

export interface Scope {
  channel?: string | undefined;
  assignee?: string | undefined;
  department?: string | undefined;
  /** Business seconds (true) or wall seconds. */
  biz: boolean;
  /** One result per value of this dimension (breakdown). */
  by?: Dimension | undefined;
  /** The values of `by` to read ('' included for none): an index seek each, not a scan of the rest. */
  keys?: string[] | undefined;
}

export interface Acc {
  n: number;
  seconds: number;
  /** Durations per bin, indexed by bin (src/modules/reports/bins.ts); grown as bins appear. */
  bins: Float64Array;
  /** Every duration, when read one by one (then medians are exact). */
  values?: number[];
}

/** Results per range index, then per group key ('' without `by`), then per metric. */
export type Figures = Map<number, Map<string, Map<Metric, Acc>>>;

/** Up to this many durations in all, percentiles are computed from the facts themselves. */
const EXACT_LIMIT = 2000;

const NO_BINS = new Float64Array(0);

/** The metrics of one range and group, made empty on first use. */
export function metricsOf(out: Figures, range: number, group: string): Map<Metric, Acc> {
  let g = out.get(range);
  if (g === undefined) {
    g = new Map();
    out.set(range, g);
  }
  let m = g.get(group);
  if (m === undefined) {
    m = new Map();
    g.set(group, m);
  }
  return m;
}

function accOf(out: Figures, range: number, group: string, metric: Metric): Acc {
  const m = metricsOf(out, range, group);
  let a = m.get(metric);
  if (a === undefined) {
    a = { n: 0, seconds: 0, bins: NO_BINS };
    m.set(metric, a);
  }
  return a;
}

/** The rollup row's value of each dimension: the group, the filter, or all. */
function levelOf(s: Scope, task: boolean) {
  const pick = (d: Dimension, v: string | undefined) => (s.by === d ? null : (v ?? ALL));
  return {
    channel: pick('channel', s.channel),
    assignee: pick('assignee', s.assignee),
    department: task ? pick('department', s.department) : ALL,
  };
}

/** Where one rollup row counts: the range and its sign there. */
interface Use {
  range: number;
  sign: number;
}

/**
 * The rollup rows every range is made of, per grain and start, each with the ranges it counts for
 * (a row both added and taken away in one range counts for nothing there and is left out), and the
 * unaligned edges to read from the facts.
 */
function planOf(ranges: [number, number][]) {
  const grains = new Map<number, Map<number, Use[]>>();
  const raws: { range: number; from: number; to: number }[] = [];
  ranges.forEach(([from, to], range) => {
    const c = cover(from, to);
    for (const p of c.pieces) {
      let starts = grains.get(p.grain);
      if (starts === undefined) {
        starts = new Map();
        grains.set(p.grain, starts);
      }
      let uses = starts.get(p.start);
      if (uses === undefined) {
        uses = [];
        starts.set(p.start, uses);
      }
      const same = uses.find((u) => u.range === range);
      if (same === undefined) uses.push({ range, sign: p.sign });
      else same.sign += p.sign;
    }
    for (const [a, b] of c.raw) raws.push({ range, from: a, to: b });
  });
  for (const starts of grains.values()) {
    for (const [start, uses] of starts) {
      if (uses.some((u) => u.sign === 0)) {
        const left = uses.filter((u) => u.sign !== 0);
        if (left.length === 0) starts.delete(start);
        else starts.set(start, left);
      }
    }
  }
  return { grains, raws };
}

/** Reads the figures of `metrics` over each of `ranges` ([from, to) in ms). */
export async function readFigures(
  x: Executor,
  metrics: Metric[],
  ranges: [number, number][],
  s: Scope,
): Promise<Figures> {
  const out: Figures = new Map();
  // Conversation figures have no department: a department breakdown holds task figures only.
  const conversation = s.by === 'department' ? [] : metrics.filter((m) => !isTaskMetric(m));
  const tasks = metrics.filter(isTaskMetric);
  // Both kinds are read together unless a department narrows the task figures alone.
  const apart = s.department !== undefined && s.by !== 'department';
  const families = (apart ? [conversation, tasks] : [[...conversation, ...tasks]]).filter((f) => f.length > 0);
  const { grains, raws } = planOf(ranges);
  const runs = runsOf(grains);
  for (const family of families) {
    const task = family.every(isTaskMetric);
    const level = levelOf(s, task);
    const timed = family.filter((m) => TIMED.has(m));
    const rows = runs.length === 0 ? [] : await rollupRows(x, family, runs, level, s);
    for (const row of rows) {
      const uses = grains.get(Number(row.grain))?.get(Number(row.start));
      if (uses === undefined) continue;
      const group = s.by === undefined ? '' : (row[s.by] as string);
      for (const u of uses) {
        const a = accOf(out, u.range, group, row.metric as Metric);
        a.n += u.sign * Number(row.n);
        a.seconds += u.sign * Number(row.s);
        if (row.h !== null) a.bins = addHistogram(a.bins, row.h, u.sign);
      }
    }
    const edges = raws.length === 0 ? [] : await rawFacts(x, family, raws, s, task);
    for (const f of edges) {
      const at = num(f.at)!;
      const r = raws.find((e) => e.from <= at && at < e.to);
      if (r === undefined) continue;
      const a = accOf(out, r.range, s.by === undefined ? '' : f[s.by], f.metric as Metric);
      const v = Number(s.biz ? f.biz : f.wall) || 0;
      a.n += 1;
      a.seconds += v;
      if (TIMED.has(f.metric as Metric)) {
        const bin = binOf(v);
        a.bins = fit(a.bins, bin);
        a.bins[bin] = a.bins[bin]! + 1;
      }
    }
    // Each kind's durations are read one by one when that kind holds few enough of them.
    for (const kind of [timed.filter((m) => !isTaskMetric(m)), timed.filter(isTaskMetric)]) {
      if (kind.length > 0) await exactValues(x, out, kind, ranges, s, task);
    }
  }
  return out;
}

type Level = ReturnType<typeof levelOf>;
type Row = Record<string, unknown> & {
  metric: string;
  grain: unknown;
  start: unknown;
  n: unknown;
  s: unknown;
  h: unknown;
};

/**
 * `column` is one of `values`, as a statement whose text does not depend on how many there are
 * (one prepared statement, and on PostgreSQL a generic plan that still seeks the index for each).
 */
function oneOf(x: Executor, column: string, values: readonly string[]) {
  const ref = sql.ref(`t.${column}`);
  if (values.length === 1) return sql<boolean>`${ref} = ${values[0]}`;
  return x.dialect === 'postgres'
    ? sql<boolean>`${ref} = any(${values}::text[])`
    : sql<boolean>`${ref} in (select value from json_each(${JSON.stringify(values)}))`;
}

/** The rows to read as runs of consecutive starts of one grain: [grain, first start, last start]. */
function runsOf(grains: Map<number, Map<number, Use[]>>): [number, number, number][] {
  const out: [number, number, number][] = [];
  for (const [grain, starts] of grains) {
    const sorted = [...starts.keys()].sort((a, b) => a - b);
    for (let i = 0; i < sorted.length; ) {
      let j = i;
      while (j + 1 < sorted.length && sorted[j + 1] === sorted[j]! + grain) j++;
      out.push([grain, sorted[i]!, sorted[j]!]);
      i = j + 1;
    }
  }
  return out;
}

/**
 * The rollup rows of `metrics` in `runs`, each with its grain, start, count, the scope's summed
 * seconds as `s` and their histogram as `h` (on PostgreSQL the int4[] as text). One statement for
 * every grain and run: each run is one seek and a walk along the key (a local day in a +5:30 zone
 * is a UTC day, a run of five hours and one of two quarter-hours at each end), and the text of the
 * statement is the same whatever the number of runs.
 */
async function rollupRows(
  x: Executor,
  metrics: Metric[],
  runs: [number, number, number][],
  level: Level,
  s: Scope,
): Promise<Row[]> {
  const seconds = sql.ref(`t.${s.biz ? 'biz' : 'wall'}`);
  const bins = sql.ref(`t.${s.biz ? 'biz_bins' : 'wall_bins'}`);
  const dims = (['channel', 'assignee', 'department'] as const).map((d) => {
    const v = level[d];
    return v === null ? oneOf(x, d, s.keys ?? ['']) : sql<boolean>`${sql.ref(`t.${d}`)} = ${v}`;
  });
  const by = s.by === undefined ? sql`` : sql`, ${sql.ref(`t.${s.by}`)}`;
  const where = sql.join([oneOf(x, 'metric', metrics), ...dims], sql` and `);
  const q =
    x.dialect === 'postgres'
      ? // A lateral subquery that cannot be flattened (offset 0) keeps the runs the outer loop: with
        // the runs' real number in view the planner would rather hash every row of the figure.
        sql<Row>`select t.* from unnest(${runs.map((r) => r[0])}::int4[], ${runs.map((r) => r[1])}::int8[],
            ${runs.map((r) => r[2])}::int8[]) as r(grain, lo, hi)
          cross join lateral (select t.metric, t.grain, t.start, t.n, ${seconds} as s, ${bins}::text as h${by}
            from report_rollups t
            where ${where} and t.grain = r.grain and t.start >= r.lo and t.start <= r.hi offset 0) t`
      : // CROSS JOIN keeps the runs the outer loop: each is one seek into the key.
        sql<Row>`select t.metric, t.grain, t.start, t.n, ${seconds} as s, ${bins} as h${by}
          from json_each(${JSON.stringify(runs)}) r cross join report_rollups t
          where ${where} and t.grain = r.value ->> 0 and t.start >= r.value ->> 1 and t.start <= r.value ->> 2`;
  return (await q.execute(x)).rows;
}

interface FactRow {
  metric: string;
  at: number | string;
  wall: number | null;
  biz: number | null;
  channel: string;
  assignee: string;
  department: string;
}

/** The facts of `metrics` in the scope inside any of `spans` (disjoint, [from, to) in ms), in one statement. */
async function rawFacts(
  x: Executor,
  metrics: Metric[],
  spans: { from: number; to: number }[],
  s: Scope,
  task: boolean,
): Promise<FactRow[]> {
  const filters = [oneOf(x, 'metric', metrics)];
  if (s.channel !== undefined) filters.push(sql<boolean>`t.channel = ${s.channel}`);
  if (s.assignee !== undefined) filters.push(sql<boolean>`t.assignee = ${s.assignee}`);
  if (task && s.department !== undefined) filters.push(sql<boolean>`t.department = ${s.department}`);
  const where = sql.join(filters, sql` and `);
  const q =
    x.dialect === 'postgres'
      ? sql<FactRow>`select t.* from unnest(${spans.map((p) => p.from)}::int8[], ${spans.map((p) => p.to)}::int8[])
            as r(lo, hi)
          cross join lateral (select t.metric, t.at, t.wall, t.biz, t.channel, t.assignee, t.department
            from report_facts t where ${where} and t.at >= r.lo and t.at < r.hi offset 0) t`
      : sql<FactRow>`select t.metric, t.at, t.wall, t.biz, t.channel, t.assignee, t.department
          from json_each(${JSON.stringify(spans.map((p) => [p.from, p.to]))}) r cross join report_facts t
          where ${where} and t.at >= r.value ->> 0 and t.at < r.value ->> 1`;
  return (await q.execute(x)).rows;
}

/** When few durations are involved, reads them one by one so percentiles are exact. */
async function exactValues(
  x: Executor,
  out: Figures,
  timed: Metric[],
  ranges: [number, number][],
  s: Scope,
  task: boolean,
) {
  let total = 0;
  for (const groups of out.values()) for (const m of groups.values()) for (const t of timed) total += m.get(t)?.n ?? 0;
  if (total > EXACT_LIMIT || ranges.length === 0) return;
  const lo = Math.min(...ranges.map((r) => r[0]));
  const hi = Math.max(...ranges.map((r) => r[1]));
  const facts = await rawFacts(x, timed, [{ from: lo, to: hi }], s, task);
  if (facts.length > EXACT_LIMIT * 2) return;
  const sorted = ranges.map((r, i) => [r[0], r[1], i] as const).sort((a, b) => a[0] - b[0]);
  for (const f of facts) {
    const at = num(f.at)!;
    const hit = sorted.find(([a, b]) => a <= at && at < b);
    if (hit === undefined) continue;
    const a = accOf(out, hit[2], s.by === undefined ? '' : f[s.by], f.metric as Metric);
    a.values ??= [];
    a.values.push(Number(s.biz ? f.biz : f.wall) || 0);
  }
  for (const groups of out.values()) {
    for (const m of groups.values())
      for (const t of timed) {
        const a = m.get(t);
        if (a !== undefined) a.values ??= [];
      }
  }
}
