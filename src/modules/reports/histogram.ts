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
 * Adds a stored histogram times `sign` into `into`, counts indexed by bin, and returns it (a larger
 * copy when a bin lies past its end): an SQLite blob, or a PostgreSQL int4[] in its text form
 * (`{3,NULL,1}` from bin 1, `[20:22]={3,NULL,1}` from bin 20). A report adds thousands of these, so
 * both are read character by character into a typed array, with no objects made per row.
 */
export function addHistogram(into: Float64Array, stored: unknown, sign: number): Float64Array {
  if (stored === null || stored === undefined) return into;
  if (stored instanceof Uint8Array) {
    const end = stored.length - (stored.length % ENTRY);
    if (end === 0) return into;
    const x = stored;
    // Entries are sorted by bin: the last one is the highest.
    const out = fit(into, (x[end - ENTRY]! << 8) | x[end - ENTRY + 1]!);
    for (let i = 0; i < end; i += ENTRY) {
      const bin = (x[i]! << 8) | x[i + 1]!;
      out[bin] = out[bin]! + sign * ((x[i + 2]! << 24) | (x[i + 3]! << 16) | (x[i + 4]! << 8) | x[i + 5]!);
    }
    return out;
  }
  return addPgText(into, String(stored), sign);
}

const OPEN = 123; // {
const CLOSE = 125; // }
const COMMA = 44;
const MINUS = 45;
const COLON = 58;
const BRACKET = 91; // [
const N = 78; // the first letter of NULL
const ZERO = 48;

function addPgText(into: Float64Array, text: string, sign: number): Float64Array {
  let i = 0;
  let bin = 1;
  if (text.charCodeAt(0) === BRACKET) {
    let negative = false;
    i = 1;
    if (text.charCodeAt(i) === MINUS) {
      negative = true;
      i++;
    }
    let lo = 0;
    for (; text.charCodeAt(i) !== COLON; i++) lo = lo * 10 + text.charCodeAt(i) - ZERO;
    bin = negative ? -lo : lo;
    while (text.charCodeAt(i) !== OPEN) i++;
  }
  i++;
  // The elements after `{`, one bin each: count them first to grow the array once.
  let elements = 1;
  for (let k = i; k < text.length; k++) if (text.charCodeAt(k) === COMMA) elements++;
  if (text.charCodeAt(i) === CLOSE) return into;
  const out = fit(into, bin + elements - 1);
  while (i < text.length) {
    let c = text.charCodeAt(i);
    if (c === N) {
      // NULL: an empty bin.
      i += 5;
      bin++;
      continue;
    }
    let negative = false;
    if (c === MINUS) {
      negative = true;
      c = text.charCodeAt(++i);
    }
    let v = 0;
    while (c >= ZERO && c <= ZERO + 9) {
      v = v * 10 + c - ZERO;
      c = text.charCodeAt(++i);
    }
    out[bin] = out[bin]! + sign * (negative ? -v : v);
    bin++;
    i++;
  }
  return out;
}

/** `counts` if it holds `bin`, else a copy long enough (bins run to a few hundred at most). */
export function fit(counts: Float64Array, bin: number): Float64Array {
  if (bin < counts.length) return counts;
  const out = new Float64Array(Math.max(bin + 1, 256));
  out.set(counts);
  return out;
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
