// Owns reading figures back: for each requested range (a period, or each bucket of a time
// series) and each metric, the count, summed seconds and histogram, from the rollup rows that
// cover the range (src/modules/reports/cover.ts; each holds its histogram, migration 033) plus the
// facts at its unaligned edges. When few
// enough durations are involved they are read one by one, so medians and p90s are exact.
import { sql } from 'kysely';
import type { Executor } from '../../db/types.js';
import { binOf } from './bins.js';
import { cover } from './cover.js';
import { ALL, isTaskMetric, type Metric, TIMED } from './facts.js';
import { addHistogram } from './histogram.js';
import { num, rdb } from './tables.js';

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
  bins: Map<number, number>;
  /** Every duration, when read one by one (then medians are exact). */
  values?: number[];
}

/** Results per range index, then per group key ('' without `by`), then per metric. */
export type Figures = Map<number, Map<string, Map<Metric, Acc>>>;

/** Up to this many durations in all, percentiles are computed from the facts themselves. */
const EXACT_LIMIT = 2000;

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
    a = { n: 0, seconds: 0, bins: new Map() };
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
  const families = [conversation, metrics.filter(isTaskMetric)].filter((f) => f.length > 0);
  // Which range each rollup row counts for, and with which sign.
  const uses = new Map<string, { range: number; sign: number }[]>();
  const starts = new Map<number, Set<number>>();
  const raws: { range: number; from: number; to: number }[] = [];
  ranges.forEach(([from, to], range) => {
    const c = cover(from, to);
    for (const p of c.pieces) {
      const key = `${p.grain}|${p.start}`;
      const list = uses.get(key) ?? [];
      list.push({ range, sign: p.sign });
      uses.set(key, list);
      if (!starts.has(p.grain)) starts.set(p.grain, new Set());
      starts.get(p.grain)!.add(p.start);
    }
    for (const [a, b] of c.raw) raws.push({ range, from: a, to: b });
  });
  for (const family of families) {
    const task = isTaskMetric(family[0]!);
    const level = levelOf(s, task);
    const timed = family.filter((m) => TIMED.has(m));
    // One range (a summary, a breakdown): rows of a grain and sign are summed by the store, so a
    // year of histograms comes back as one row per bin. Several (a time series): row by row.
    const single = ranges.length === 1;
    for (const [grain, set] of starts) {
      const parts: { sign: number; starts: number[] }[] = [];
      if (single) {
        // Grouped by the net sign of each row (a row both added and taken away counts for nothing).
        const bySign = new Map<number, number[]>();
        for (const st of set) {
          const net = uses.get(`${grain}|${st}`)!.reduce((t, u) => t + u.sign, 0);
          if (net !== 0) bySign.set(net, [...(bySign.get(net) ?? []), st]);
        }
        for (const [sign, list] of bySign) parts.push({ sign, starts: list });
      } else parts.push({ sign: 0, starts: [...set] });
      for (const part of parts) {
        for (let i = 0; i < part.starts.length; i += 5000) {
          const chunk = part.starts.slice(i, i + 5000);
          if (chunk.length === 0) continue;
          const targets = (start: unknown) =>
            part.sign === 0 ? (uses.get(`${grain}|${num(start as number)}`) ?? []) : [{ range: 0, sign: part.sign }];
          for (const row of await rollupRows(x, family, grain, chunk, level, s, single)) {
            const group = s.by === undefined ? '' : (row[s.by] as string);
            for (const u of targets(row.start)) {
              const a = accOf(out, u.range, group, row.metric as Metric);
              a.n += u.sign * Number(row.n);
              a.seconds += u.sign * Number(s.biz ? row.biz : row.wall);
              addHistogram(a.bins, row.h, row.lo, u.sign);
            }
          }
          // Summed rows carry no histogram: the timed figures' rows are read again, each with its own.
          if (!single || timed.length === 0) continue;
          for (const row of await histogramRows(x, timed, grain, chunk, level, s)) {
            const group = s.by === undefined ? '' : (row[s.by] as string);
            for (const u of targets(row.start)) {
              addHistogram(accOf(out, u.range, group, row.metric as Metric).bins, row.h, row.lo, u.sign);
            }
          }
        }
      }
    }
    for (const r of raws) {
      for (const f of await rawFacts(x, family, r.from, r.to, s, task)) {
        const a = accOf(out, r.range, s.by === undefined ? '' : f[s.by], f.metric as Metric);
        const v = Number(s.biz ? f.biz : f.wall) || 0;
        a.n += 1;
        a.seconds += v;
        if (TIMED.has(f.metric as Metric)) {
          const bin = binOf(v);
          a.bins.set(bin, (a.bins.get(bin) ?? 0) + 1);
        }
      }
    }
    if (timed.length > 0) await exactValues(x, out, timed, ranges, s, task);
  }
  return out;
}

type Level = ReturnType<typeof levelOf>;
type Row = Record<string, unknown> & { metric: string; n: unknown };

function rollupsAt(x: Executor, metrics: Metric[], grain: number, starts: number[], level: Level, s: Scope) {
  let q = rdb(x)
    .selectFrom('report_rollups')
    .where('metric', 'in', metrics)
    .where('grain', '=', grain)
    .where('start', 'in', starts);
  for (const d of ['channel', 'assignee', 'department'] as const) {
    q = level[d] === null ? q.where(d, 'in', s.keys ?? ['']) : q.where(d, '=', level[d]);
  }
  return q;
}

/** The histogram of the scope's seconds as `h` (and on PostgreSQL its first bin as `lo`). */
function histogramColumns(x: Executor, s: Scope) {
  const column = sql.ref(s.biz ? 'biz_bins' : 'wall_bins');
  return x.dialect === 'postgres'
    ? [sql<unknown>`array_to_json(${column})`.as('h'), sql<unknown>`array_lower(${column}, 1)`.as('lo')]
    : [sql<unknown>`${column}`.as('h'), sql<unknown>`null`.as('lo')];
}

/** Rollup rows of `grain` at `starts`: each with its histogram (summed = false) or summed per metric and group. */
async function rollupRows(
  x: Executor,
  metrics: Metric[],
  grain: number,
  starts: number[],
  level: Level,
  s: Scope,
  summed: boolean,
): Promise<Row[]> {
  const q = rollupsAt(x, metrics, grain, starts, level, s);
  if (!summed)
    return (await q
      .select(['metric', 'start', 'n', 'wall', 'biz', 'channel', 'assignee', 'department'])
      .select(histogramColumns(x, s))
      .execute()) as Row[];
  const by = s.by === undefined ? [] : [s.by];
  return (await q
    .select(['metric', ...by])
    .select([sql<number>`sum(n)`.as('n'), sql<number>`sum(wall)`.as('wall'), sql<number>`sum(biz)`.as('biz')])
    .groupBy(['metric', ...by])
    .execute()) as Row[];
}

/** The histograms of rollup rows of `grain` at `starts`, one row each. */
async function histogramRows(
  x: Executor,
  metrics: Metric[],
  grain: number,
  starts: number[],
  level: Level,
  s: Scope,
): Promise<Row[]> {
  return (await rollupsAt(x, metrics, grain, starts, level, s)
    .select(['metric', 'start', 'channel', 'assignee', 'department'])
    .select(histogramColumns(x, s))
    .execute()) as unknown as Row[];
}

function rawFacts(x: Executor, metrics: Metric[], from: number, to: number, s: Scope, task: boolean) {
  let q = rdb(x)
    .selectFrom('report_facts')
    .select(['metric', 'at', 'wall', 'biz', 'channel', 'assignee', 'department'])
    .where('metric', 'in', metrics)
    .where('at', '>=', from)
    .where('at', '<', to);
  if (s.channel !== undefined) q = q.where('channel', '=', s.channel);
  if (s.assignee !== undefined) q = q.where('assignee', '=', s.assignee);
  if (task && s.department !== undefined) q = q.where('department', '=', s.department);
  return q.execute();
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
  const facts = await rawFacts(x, timed, lo, hi, s, task);
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
