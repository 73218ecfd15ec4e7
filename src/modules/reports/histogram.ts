// Owns how a rollup row holds its histogram (migration 033): the counts per bin (src/modules/reports/
// bins.ts) of its durations, in the row itself, so a report reads one row per piece of a range, not
// one per piece and bin. A write adds its deltas to the stored histogram in the store:
//
// - SQLite: a blob of (bin uint16, count int32) entries, big-endian, sorted by bin, no zero counts;
//   merged by `report_hist_add`, a function registered on the connection (registerHistogramFunctions).
// - PostgreSQL: an int4[] indexed by bin (its lower bound is the lowest bin it ever held, gaps are
//   null), merged by the function of the same name migration 033 creates.
import type { Database as SqliteConnection } from 'better-sqlite3';

/** Bin → count (negative when a delta takes away). */
export type Counts = Map<number, number>;

const ENTRY = 6;

/** The SQLite form of counts (zeros left out). */
export function sqliteHistogram(counts: Counts): Buffer {
  const bins = [...counts.keys()].filter((b) => counts.get(b) !== 0).sort((a, b) => a - b);
  const out = Buffer.allocUnsafe(bins.length * ENTRY);
  bins.forEach((bin, i) => {
    out.writeUInt16BE(bin, i * ENTRY);
    out.writeInt32BE(counts.get(bin)!, i * ENTRY + 2);
  });
  return out;
}

/** Two SQLite histograms added, entry by entry (both sorted by bin). */
export function addSqliteHistograms(a: Uint8Array | null, b: Uint8Array | null): Buffer | null {
  if (b === null || b.length === 0) return a === null ? null : Buffer.from(a);
  if (a === null || a.length === 0) return Buffer.from(b);
  const x = Buffer.from(a.buffer, a.byteOffset, a.length);
  const y = Buffer.from(b.buffer, b.byteOffset, b.length);
  const out = Buffer.allocUnsafe(x.length + y.length);
  let i = 0;
  let j = 0;
  let o = 0;
  const put = (bin: number, n: number) => {
    if (n === 0) return;
    out.writeUInt16BE(bin, o);
    out.writeInt32BE(n, o + 2);
    o += ENTRY;
  };
  while (i < x.length || j < y.length) {
    const bx = i < x.length ? x.readUInt16BE(i) : Number.POSITIVE_INFINITY;
    const by = j < y.length ? y.readUInt16BE(j) : Number.POSITIVE_INFINITY;
    if (bx === by) {
      put(bx, x.readInt32BE(i + 2) + y.readInt32BE(j + 2));
      i += ENTRY;
      j += ENTRY;
    } else if (bx < by) {
      put(bx, x.readInt32BE(i + 2));
      i += ENTRY;
    } else {
      put(by, y.readInt32BE(j + 2));
      j += ENTRY;
    }
  }
  return out.subarray(0, o);
}

/** The PostgreSQL form of counts: an int4[] literal whose bounds are the lowest and highest bin. */
export function pgHistogram(counts: Counts): string {
  const bins = [...counts.keys()];
  const lo = Math.min(...bins);
  const hi = Math.max(...bins);
  const values: number[] = [];
  for (let b = lo; b <= hi; b++) values.push(counts.get(b) ?? 0);
  return `[${lo}:${hi}]={${values.join(',')}}`;
}

/**
 * Adds a stored histogram into `into` with `sign`: an SQLite blob, or a PostgreSQL array read as
 * `{ lo, values }` (the array's lower bound and its elements, SELECTed as `array_lower` and
 * `array_to_json`).
 */
export function addHistogram(into: Counts, stored: unknown, lo: unknown, sign: number): void {
  if (stored === null || stored === undefined) return;
  if (stored instanceof Uint8Array) {
    const x = Buffer.from(stored.buffer, stored.byteOffset, stored.length);
    for (let i = 0; i < x.length; i += ENTRY) {
      const bin = x.readUInt16BE(i);
      into.set(bin, (into.get(bin) ?? 0) + sign * x.readInt32BE(i + 2));
    }
    return;
  }
  const values = (typeof stored === 'string' ? JSON.parse(stored) : stored) as (number | null)[];
  const first = Number(lo);
  for (let i = 0; i < values.length; i++) {
    const n = values[i];
    if (n === null || n === undefined || n === 0) continue;
    into.set(first + i, (into.get(first + i) ?? 0) + sign * n);
  }
}

/**
 * Registers the histogram functions on an SQLite connection: `report_hist_add(a, b)` adds two
 * histograms; the aggregate `report_hist_sum(bin, n)` builds one from (bin, count) rows, a null bin
 * skipped (the seed command sums its rows with it).
 */
export function registerHistogramFunctions(conn: SqliteConnection): void {
  conn.function('report_hist_add', { deterministic: true }, (a: unknown, b: unknown) =>
    addSqliteHistograms(a as Uint8Array | null, b as Uint8Array | null),
  );
  conn.aggregate('report_hist_sum', {
    start: () => new Map<number, number>(),
    // better-sqlite3 takes the aggregate's arity from step's declared parameters (a rest parameter
    // declares none): two arguments, which its typings (one value per step) do not describe.
    step: ((counts: Counts, bin: unknown, n: unknown) => {
      if (bin === null) return counts;
      const b = Number(bin);
      counts.set(b, (counts.get(b) ?? 0) + Number(n));
      return counts;
    }) as unknown as (counts: Counts, next: Counts) => Counts,
    result: (counts: Counts) => (counts.size === 0 ? null : sqliteHistogram(counts)),
  });
}
