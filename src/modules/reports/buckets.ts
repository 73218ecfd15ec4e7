// Owns the buckets of a time series: local hours, days, ISO weeks (from Monday) or months in a time
// zone, DST-correct (a local day may last 23 or 25 hours), the first and last cut to [from, to).
import { addDays, instantOf, localOf, weekday } from './zone.js';

export type Granularity = 'hour' | 'day' | 'week' | 'month';

/** The instant after `t` where the next bucket begins. */
function nextBoundary(t: number, g: Granularity, tz: string): number {
  if (g === 'hour') {
    // Every zone's offset is a whole number of quarter-hours: local hours begin on UTC quarters.
    for (let c = Math.floor(t / 900_000) * 900_000 + 900_000; ; c += 900_000) {
      const l = localOf(c, tz);
      if (l.minute % 60 === 0 && l.second === 0) return c;
    }
  }
  const l = localOf(t, tz);
  let day: { y: number; m: number; d: number };
  if (g === 'day') day = addDays(l.y, l.m, l.d, 1);
  else if (g === 'week') day = addDays(l.y, l.m, l.d, 7 - weekday(l.y, l.m, l.d));
  else day = addDays(l.y, l.m + 1, 1, 0);
  const next = instantOf(day.y, day.m, day.d, 0, tz);
  // A midnight skipped by a DST jump can place the boundary at or before t; step a day on.
  return next > t ? next : instantOf(day.y, day.m, day.d + 1, 0, tz);
}

/** The buckets [start, end) of [from, to); null when there would be more than `max`. */
export function bucketsOf(
  from: number,
  to: number,
  g: Granularity,
  tz: string,
  max: number,
): [number, number][] | null {
  const out: [number, number][] = [];
  let t = from;
  while (t < to) {
    if (out.length >= max) return null;
    const next = Math.min(nextBoundary(t, g, tz), to);
    out.push([t, next]);
    t = next;
  }
  return out;
}
