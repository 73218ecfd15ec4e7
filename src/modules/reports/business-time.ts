// Owns business-time arithmetic under the `business_hours` setting: how many open seconds lie
// between two instants, and the instant a number of open seconds after another, in the setting's
// time zone (DST-correct: each day's intervals are placed as wall-clock times of that very day).
import { addDays, instantOf, localOf, weekday } from './zone.js';

const DAYS = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'] as const;
type Day = (typeof DAYS)[number];

export interface BusinessHours {
  timezone: string;
  days: Partial<Record<Day, { open: string; close: string }[]>>;
}

/** Every day 00:00–24:00: the setting's default. */
export const ALWAYS_OPEN: BusinessHours = {
  timezone: 'UTC',
  days: Object.fromEntries(DAYS.map((d) => [d, [{ open: '00:00', close: '24:00' }]])),
};

const minutesOf = (hhmm: string) => Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5));
/** 24:00 (and, as the setting's earlier default wrote it, 23:59) closes at midnight. */
const closeOf = (hhmm: string) => (hhmm === '23:59' ? 1440 : minutesOf(hhmm));

const weeks = new WeakMap<BusinessHours, [number, number][][]>();

/** The open intervals of each weekday (0 = Monday) in minutes, merged and sorted (kept per setting value). */
function weekOf(h: BusinessHours): [number, number][][] {
  let w = weeks.get(h);
  if (w === undefined) {
    w = computeWeek(h);
    weeks.set(h, w);
  }
  return w;
}

function computeWeek(h: BusinessHours): [number, number][][] {
  return DAYS.map((d) => {
    const ivs = (h.days[d] ?? [])
      .map((iv) => [minutesOf(iv.open), closeOf(iv.close)] as [number, number])
      .filter(([a, b]) => b > a)
      .sort((x, y) => x[0] - y[0]);
    const out: [number, number][] = [];
    for (const iv of ivs) {
      const last = out[out.length - 1];
      if (last !== undefined && iv[0] <= last[1]) last[1] = Math.max(last[1], iv[1]);
      else out.push([iv[0], iv[1]]);
    }
    return out;
  });
}

/** True when every day is open 00:00–24:00: business time is wall time. */
export function alwaysOpen(h: BusinessHours): boolean {
  return weekOf(h).every((ivs) => ivs.length === 1 && ivs[0]![0] === 0 && ivs[0]![1] === 1440);
}

/** True when no day has an open interval: no business time ever passes. */
export function neverOpen(h: BusinessHours): boolean {
  return weekOf(h).every((ivs) => ivs.length === 0);
}

/** The open intervals, as instants (ms), of the local days from `from` on, one day at a time. */
function* openIntervals(h: BusinessHours, startMs: number): Generator<[number, number]> {
  const week = weekOf(h);
  const tz = h.timezone;
  // From the day before: an interval of the previous local day may still run (none cross
  // midnight, but a DST fold can make the local date lag the instant).
  let day = addDays(...(Object.values(localOf(startMs, tz)).slice(0, 3) as [number, number, number]), -1);
  for (;;) {
    for (const [open, close] of week[weekday(day.y, day.m, day.d)]!) {
      yield [instantOf(day.y, day.m, day.d, open, tz), instantOf(day.y, day.m, day.d, close, tz)];
    }
    day = addDays(day.y, day.m, day.d, 1);
  }
}

/** Open seconds between the instants `a` and `b` (ms); 0 when b ≤ a. */
export function businessSecondsBetween(h: BusinessHours, a: number, b: number): number {
  if (b <= a) return 0;
  if (alwaysOpen(h)) return (b - a) / 1000;
  if (neverOpen(h)) return 0;
  let total = 0;
  for (const [s, e] of openIntervals(h, a)) {
    if (s >= b) break;
    total += Math.max(0, Math.min(e, b) - Math.max(s, a));
  }
  return total / 1000;
}

/** Local days searched before a target is declared unreachable (the hours open almost never). */
const MAX_DAYS = 3700;

/**
 * The instant `seconds` open seconds after `start` (ms), or null when the hours never open enough
 * within ten years.
 */
export function addBusinessSeconds(h: BusinessHours, start: number, seconds: number): number | null {
  if (alwaysOpen(h)) return start + seconds * 1000;
  if (neverOpen(h)) return null;
  let left = seconds * 1000;
  let days = 0;
  let lastEnd = -Infinity;
  for (const [s, e] of openIntervals(h, start)) {
    if (s < lastEnd) continue;
    lastEnd = e;
    if (++days > MAX_DAYS * 3) return null;
    const from = Math.max(s, start);
    if (e <= from) continue;
    if (from + left <= e) return from + left;
    left -= e - from;
  }
  return null;
}
