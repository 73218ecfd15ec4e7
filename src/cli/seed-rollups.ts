// Owns the seed's report facts in memory and their roll-up (docs/reports.md, "How it is kept"):
// the facts of every seeded conversation and task, column by column (a year of a million
// conversations is about nine million of them), and their sums per UTC quarter-hour, hour, day,
// 7-day and 28-day block under every combination of channel, assignee and department, exactly
// the rows the write path (src/modules/reports/facts.ts) adds fact by fact, histograms included.
// The rows are built one metric at a time, each grain from the one below it, and handed out in the
// table's key order: SQLite and PostgreSQL then add each to the page the previous one went to
// (in time order, every row lands somewhere else in the key's B-tree, several times the work).
import { binOf } from '../modules/reports/bins.js';
import {
  ALL,
  CONVERSATION_METRICS,
  type Fact,
  GRAINS,
  type Metric,
  type RollupRow,
  TASK_METRICS,
  TIMED,
} from '../modules/reports/facts.js';
import type { Counts } from '../modules/reports/histogram.js';

const METRICS: readonly Metric[] = [...CONVERSATION_METRICS, ...TASK_METRICS];
/** Metrics in the order of their names, as the rollup table's key sorts them. */
const BY_NAME = METRICS.map((_, i) => i).sort((a, b) => (METRICS[a]! < METRICS[b]! ? -1 : 1));
const METRIC_INDEX = new Map(METRICS.map((m, i) => [m, i]));
const IS_TASK = METRICS.map((m) => (TASK_METRICS as readonly string[]).includes(m));
const IS_TIMED = METRICS.map((m) => TIMED.has(m));

/** The grains from the finest, each summed from the one before it. */
const FINE_FIRST = [...GRAINS].sort((a, b) => a - b);
const QUARTER = FINE_FIRST[0]!;

/** The distinct values of one dimension, '*' (all) first. */
class Dictionary {
  readonly values: string[] = [ALL];
  private readonly index = new Map<string, number>([[ALL, 0]]);

  of(value: string): number {
    let i = this.index.get(value);
    if (i === undefined) {
      i = this.values.length;
      this.values.push(value);
      this.index.set(value, i);
    }
    return i;
  }
}

/** Facts in columns: a few dozen bytes each instead of an object each. */
export class FactLog {
  length = 0;
  private capacity = 0;
  metric = new Uint8Array(0);
  at = new Float64Array(0);
  channel = new Uint32Array(0);
  assignee = new Uint32Array(0);
  department = new Uint32Array(0);
  /** NaN where the fact has no duration. */
  wall = new Float64Array(0);
  biz = new Float64Array(0);
  /** The conversation or task of the few facts that carry one. */
  readonly refs = new Map<number, string>();
  readonly channels = new Dictionary();
  readonly assignees = new Dictionary();
  readonly departments = new Dictionary();

  push(f: Fact): void {
    if (this.length === this.capacity) this.grow();
    const i = this.length++;
    this.metric[i] = METRIC_INDEX.get(f.metric)!;
    this.at[i] = f.at;
    this.channel[i] = this.channels.of(f.channel);
    this.assignee[i] = this.assignees.of(f.assignee);
    this.department[i] = this.departments.of(f.department);
    this.wall[i] = f.wall ?? Number.NaN;
    this.biz[i] = f.biz ?? Number.NaN;
    if (f.ref !== undefined && f.ref !== null) this.refs.set(i, f.ref);
  }

  /** The fact at `i` as the report_facts row the write path stores. */
  row(i: number) {
    const wall = this.wall[i]!;
    const biz = this.biz[i]!;
    return {
      metric: METRICS[this.metric[i]!]!,
      at: this.at[i]!,
      channel: this.channels.values[this.channel[i]!]!,
      assignee: this.assignees.values[this.assignee[i]!]!,
      department: this.departments.values[this.department[i]!]!,
      wall: Number.isNaN(wall) ? null : wall,
      biz: Number.isNaN(biz) ? null : biz,
      ref: this.refs.get(i) ?? null,
    };
  }

  private grow(): void {
    const capacity = Math.max(1 << 16, this.capacity * 2);
    const copy = <T extends Uint8Array | Uint32Array | Float64Array>(a: T, make: (n: number) => T): T => {
      const b = make(capacity);
      b.set(a);
      return b;
    };
    this.metric = copy(this.metric, (n) => new Uint8Array(n));
    this.at = copy(this.at, (n) => new Float64Array(n));
    this.channel = copy(this.channel, (n) => new Uint32Array(n));
    this.assignee = copy(this.assignee, (n) => new Uint32Array(n));
    this.department = copy(this.department, (n) => new Uint32Array(n));
    this.wall = copy(this.wall, (n) => new Float64Array(n));
    this.biz = copy(this.biz, (n) => new Float64Array(n));
    this.capacity = capacity;
  }
}

/** Rows handed out at a time. */
const BATCH = 10_000;
/** Grains whose rows keep a histogram of every bin (a day's or more: many bins each); finer ones keep pairs. */
const DENSE_FROM = FINE_FIRST.indexOf(86_400);

/**
 * A histogram being summed: bin, count, bin, count … for a quarter-hour or an hour (a few bins
 * each, most one); a count per bin for coarser grains.
 */
type Bins = number[] | Int32Array;

function addBin(h: Bins, bin: number, n: number): void {
  if (h instanceof Int32Array) {
    h[bin]! += n;
    return;
  }
  for (let i = 0; i < h.length; i += 2) {
    if (h[i] === bin) {
      h[i + 1]! += n;
      return;
    }
  }
  h.push(bin, n);
}

function addBins(into: Bins, from: Bins): void {
  if (from instanceof Int32Array) {
    for (let b = 0; b < from.length; b++) if (from[b] !== 0) addBin(into, b, from[b]!);
    return;
  }
  for (let i = 0; i < from.length; i += 2) addBin(into, from[i]!, from[i + 1]!);
}

function countsOf(h: Bins): Counts {
  const c: Counts = new Map();
  if (h instanceof Int32Array) {
    for (let b = 0; b < h.length; b++) if (h[b] !== 0) c.set(b, h[b]!);
  } else {
    for (let i = 0; i < h.length; i += 2) c.set(h[i]!, h[i + 1]!);
  }
  return c;
}

/** One metric's rows in columns (combination, grain, start, count, sums), histograms beside them. */
class Rows {
  length = 0;
  combo = new Int32Array(1 << 16);
  grain = new Uint8Array(1 << 16);
  start = new Float64Array(1 << 16);
  n = new Float64Array(1 << 16);
  wall = new Float64Array(1 << 16);
  biz = new Float64Array(1 << 16);
  readonly wallBins: Bins[] = [];
  readonly bizBins: Bins[] = [];

  constructor(
    readonly timed: boolean,
    private readonly bins: number,
  ) {}

  add(combo: number, grain: number, start: number): number {
    const r = this.length++;
    if (r === this.n.length) {
      for (const c of ['combo', 'grain', 'start', 'n', 'wall', 'biz'] as const) {
        const a = this[c];
        const b = new (a.constructor as new (n: number) => typeof a)(r * 2);
        b.set(a as never);
        (this as Record<typeof c, typeof a>)[c] = b;
      }
    }
    this.combo[r] = combo;
    this.grain[r] = grain;
    this.start[r] = start;
    this.n[r] = 0;
    this.wall[r] = 0;
    this.biz[r] = 0;
    if (this.timed) {
      this.wallBins.push(grain >= DENSE_FROM ? new Int32Array(this.bins) : []);
      this.bizBins.push(grain >= DENSE_FROM ? new Int32Array(this.bins) : []);
    }
    return r;
  }

  /** Adds row `from` into row `to`. */
  addRow(to: number, from: number): void {
    this.n[to]! += this.n[from]!;
    this.wall[to]! += this.wall[from]!;
    this.biz[to]! += this.biz[from]!;
    if (!this.timed) return;
    addBins(this.wallBins[to]!, this.wallBins[from]!);
    addBins(this.bizBins[to]!, this.bizBins[from]!);
  }
}

/** Indexes 0…n−1 ordered by `bucketOf` (0…buckets−1), stable: a counting sort. */
function bucketSort(
  n: number,
  buckets: number,
  bucketOf: (i: number) => number,
): { order: Int32Array; offsets: Int32Array } {
  const offsets = new Int32Array(buckets + 1);
  const of = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    of[i] = bucketOf(i);
    offsets[of[i]! + 1]!++;
  }
  for (let b = 0; b < buckets; b++) offsets[b + 1]! += offsets[b]!;
  const order = new Int32Array(n);
  const fill = offsets.slice(0, buckets);
  for (let i = 0; i < n; i++) order[fill[of[i]!]!++] = i;
  return { order, offsets };
}

/**
 * The rollup rows of every fact in `log`, in batches, in the table's key order (metric, channel,
 * assignee, department, grain, start). Every key comes once, so a batch can be written with the
 * write path's upsert, adding to rows a previous run left.
 */
export function* rollupRows(log: FactLog): Generator<RollupRow[]> {
  if (log.length === 0) return;
  const dims = [log.channels.values, log.assignees.values, log.departments.values];
  // Each dimension's values ranked by their text, so a combination numbered from the ranks sorts as the key does.
  const ranks = dims.map((values) => {
    const order = values.map((_, i) => i).sort((a, b) => (values[a]! < values[b]! ? -1 : 1));
    const rank = new Int32Array(values.length);
    order.forEach((v, r) => {
      rank[v] = r;
    });
    return { rank, order };
  });
  const [nc, na, nd] = dims.map((v) => v.length) as [number, number, number];
  const combos = nc * na * nd;
  const comboOf = (c: number, a: number, d: number) =>
    (ranks[0]!.rank[c]! * na + ranks[1]!.rank[a]!) * nd + ranks[2]!.rank[d]!;
  const grains = FINE_FIRST.length;
  const startOf = (at: number, grain: number) => Math.floor(at / 1000 / grain) * grain;

  // The facts by metric (in the key's order) and quarter-hour; stable, so sums add in the facts' order.
  let first = Number.POSITIVE_INFINITY;
  let last = Number.NEGATIVE_INFINITY;
  let maxBin = 0;
  for (let i = 0; i < log.length; i++) {
    const q = startOf(log.at[i]!, QUARTER) / QUARTER;
    if (q < first) first = q;
    if (q > last) last = q;
    if (IS_TIMED[log.metric[i]!]!) {
      for (const v of [log.wall[i]!, log.biz[i]!]) maxBin = Math.max(maxBin, binOf(Number.isNaN(v) ? 0 : v));
    }
  }
  const slots = last - first + 1;
  const metricRank = new Int32Array(METRICS.length);
  BY_NAME.forEach((m, r) => {
    metricRank[m] = r;
  });
  const facts = bucketSort(
    log.length,
    METRICS.length * slots,
    (i) => metricRank[log.metric[i]!]! * slots + startOf(log.at[i]!, QUARTER) / QUARTER - first,
  );

  // The row each combination adds to at the current start of a grain.
  const current = new Int32Array(combos);
  const currentStart = new Float64Array(combos);
  for (let rank = 0; rank < BY_NAME.length; rank++) {
    const m = BY_NAME[rank]!;
    const lo = facts.offsets[rank * slots]!;
    const hi = facts.offsets[(rank + 1) * slots]!;
    if (lo === hi) continue;
    const timed = IS_TIMED[m]!;
    const task = IS_TASK[m]!;
    const rows = new Rows(timed, maxBin + 1);
    currentStart.fill(Number.NaN);
    for (let k = lo; k < hi; k++) {
      const i = facts.order[k]!;
      const wall = log.wall[i]!;
      const biz = log.biz[i]!;
      const w = Number.isNaN(wall) ? 0 : wall;
      const b = Number.isNaN(biz) ? 0 : biz;
      const wb = timed ? binOf(w) : 0;
      const bb = timed ? binOf(b) : 0;
      const start = startOf(log.at[i]!, QUARTER);
      const c = log.channel[i]!;
      const a = log.assignee[i]!;
      const d = task ? log.department[i]! : 0;
      // Every combination of the fact's values with '*' (index 0); conversation figures have no department.
      for (let cc = 0; cc < 2; cc++) {
        for (let aa = 0; aa < 2; aa++) {
          for (let dd = 0; dd < (d === 0 ? 1 : 2); dd++) {
            const combo = comboOf(cc === 0 ? c : 0, aa === 0 ? a : 0, dd === 0 ? d : 0);
            let r = current[combo]!;
            if (currentStart[combo] !== start) {
              r = rows.add(combo, 0, start);
              current[combo] = r;
              currentStart[combo] = start;
            }
            rows.n[r]!++;
            rows.wall[r]! += w;
            rows.biz[r]! += b;
            if (timed) {
              addBin(rows.wallBins[r]!, wb, 1);
              addBin(rows.bizBins[r]!, bb, 1);
            }
          }
        }
      }
    }
    // Each coarser grain from the rows of the grain before it, which come in the order of their starts.
    let from = 0;
    for (let g = 1; g < grains; g++) {
      const to = rows.length;
      currentStart.fill(Number.NaN);
      for (let r = from; r < to; r++) {
        const combo = rows.combo[r]!;
        const start = startOf(rows.start[r]! * 1000, FINE_FIRST[g]!);
        let into = current[combo]!;
        if (currentStart[combo] !== start) {
          into = rows.add(combo, g, start);
          current[combo] = into;
          currentStart[combo] = start;
        }
        rows.addRow(into, r);
      }
      from = to;
    }
    // In the key's order: by combination and grain, each run already in the order of its starts.
    const sorted = bucketSort(rows.length, combos * grains, (r) => rows.combo[r]! * grains + rows.grain[r]!);
    let out: RollupRow[] = [];
    for (let k = 0; k < rows.length; k++) {
      const r = sorted.order[k]!;
      const combo = rows.combo[r]!;
      out.push({
        metric: METRICS[m]!,
        channel: dims[0]![ranks[0]!.order[Math.floor(combo / nd / na)]!]!,
        assignee: dims[1]![ranks[1]!.order[Math.floor(combo / nd) % na]!]!,
        department: dims[2]![ranks[2]!.order[combo % nd]!]!,
        grain: FINE_FIRST[rows.grain[r]!]!,
        start: rows.start[r]!,
        n: rows.n[r]!,
        wall: rows.wall[r]!,
        biz: rows.biz[r]!,
        wallBins: timed ? countsOf(rows.wallBins[r]!) : null,
        bizBins: timed ? countsOf(rows.bizBins[r]!) : null,
      });
      if (out.length === BATCH) {
        yield out;
        out = [];
      }
    }
    if (out.length > 0) yield out;
  }
}
