// Owns wall-clock arithmetic in an IANA time zone: the local date and time of an instant, and the
// instant a local date and time happen (DST-correct, so a local day may last 23 or 25 hours).
import { wallClockFormat } from '../../lib/zone-formats.js';

export interface LocalTime {
  y: number;
  m: number;
  d: number;
  /** Minute of the day, 0–1439. */
  minute: number;
  second: number;
}

/** Instants read per zone and kept; past this many the zone's cache starts again. */
const MAX_KEPT = 20_000;
const kept = new Map<string, Map<number, Readonly<LocalTime>>>();

/**
 * The wall-clock date and time of the instant `t` (ms) in `tz`. Reading it costs a formatToParts
 * call, and a report asks for the same instants again and again (each bucket's boundaries, the
 * offsets a day before and after each midnight: a year by day is about two thousand reads), so
 * each instant read is kept per zone.
 */
export function localOf(t: number, tz: string): Readonly<LocalTime> {
  let zone = kept.get(tz);
  if (zone === undefined) {
    if (kept.size >= 100) kept.clear();
    zone = new Map();
    kept.set(tz, zone);
  }
  let l = zone.get(t);
  if (l === undefined) {
    l = read(t, tz);
    if (zone.size >= MAX_KEPT) zone.clear();
    zone.set(t, l);
  }
  return l;
}

function read(t: number, tz: string): LocalTime {
  const p: Record<string, string> = {};
  for (const x of wallClockFormat(tz).formatToParts(new Date(t))) p[x.type] = x.value;
  return {
    y: Number(p.year),
    m: Number(p.month),
    d: Number(p.day),
    minute: Number(p.hour) * 60 + Number(p.minute),
    second: Number(p.second),
  };
}

/** The zone's offset from UTC at `t`, in ms (positive east of Greenwich). */
export function offsetAt(t: number, tz: string): number {
  const l = localOf(t, tz);
  const wall = Date.UTC(l.y, l.m - 1, l.d, 0, l.minute, l.second);
  return wall - Math.floor(t / 1000) * 1000;
}

/**
 * The instant a wall-clock date and minute of the day happen in `tz`: the earlier one at a fold
 * (the hour repeated when clocks go back); in a gap, read with the offset before it. `d` and
 * `minute` may overflow (day 32, minute 1440): they roll over as in Date.UTC.
 */
export function instantOf(y: number, m: number, d: number, minute: number, tz: string): number {
  const wall = Date.UTC(y, m - 1, d, 0, minute);
  const a = wall - offsetAt(wall - 86_400_000, tz);
  const b = wall - offsetAt(wall + 86_400_000, tz);
  const fits = [a, b].filter((t) => t + offsetAt(t, tz) === wall);
  if (fits.length > 0) return Math.min(...fits);
  // In a gap the wall time never happens: read with the offset before the jump (as Temporal's
  // "compatible" does), which lands as far after the jump as the wall time was after it.
  return a;
}

/** The calendar date `n` days after y-m-d. */
export function addDays(y: number, m: number, d: number, n: number): { y: number; m: number; d: number } {
  const t = new Date(Date.UTC(y, m - 1, d + n));
  return { y: t.getUTCFullYear(), m: t.getUTCMonth() + 1, d: t.getUTCDate() };
}

/** Day of the week, 0 = Monday … 6 = Sunday. */
export const weekday = (y: number, m: number, d: number): number =>
  (new Date(Date.UTC(y, m - 1, d)).getUTCDay() + 6) % 7;

export function isTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}
