// Owns reading the `business_hours` setting against a moment: whether the hotel is open then, in
// its own time zone, and when the closed period it is in began (the auto reply is sent once per
// closed period). An interval closing at 23:59 runs to midnight, so the default 00:00–23:59 every
// day is always open.
import { wallClockFormat } from '../../lib/zone-formats.js';

const DAYS = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'] as const;

export interface BusinessHours {
  timezone: string;
  days: Partial<Record<(typeof DAYS)[number], { open: string; close: string }[]>>;
}

const minutesOf = (hhmm: string) => Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5));
// 24:00 is 1440 by itself.
const closeMinutes = (hhmm: string) => (hhmm === '23:59' ? 1440 : minutesOf(hhmm));

/** The wall-clock date and minute of the day of `t` in `tz`. */
function local(t: number, tz: string): { y: number; m: number; d: number; minute: number } {
  const p = Object.fromEntries(
    wallClockFormat(tz)
      .formatToParts(new Date(t))
      .map((x) => [x.type, x.value]),
  );
  return { y: Number(p.year), m: Number(p.month), d: Number(p.day), minute: Number(p.hour) * 60 + Number(p.minute) };
}

/** The zone's offset from UTC at `t`, in ms (positive east of Greenwich). */
function offsetAt(t: number, tz: string): number {
  const l = local(t, tz);
  return Date.UTC(l.y, l.m - 1, l.d, 0, l.minute) - Math.floor(t / 60_000) * 60_000;
}

/** The instant a wall-clock date and minute of the day happen in `tz` (the first, at a DST fold). */
function instantOf(y: number, m: number, d: number, minute: number, tz: string): number {
  const guess = Date.UTC(y, m - 1, d, 0, minute);
  const first = guess - offsetAt(guess, tz);
  const second = guess - offsetAt(first, tz);
  return Math.min(first, second);
}

const dayName = (y: number, m: number, d: number) => DAYS[new Date(Date.UTC(y, m - 1, d)).getUTCDay()]!;

export function isOpen(h: BusinessHours, at: Date): boolean {
  const l = local(at.getTime(), h.timezone);
  return (h.days[dayName(l.y, l.m, l.d)] ?? []).some(
    (iv) => minutesOf(iv.open) <= l.minute && l.minute < closeMinutes(iv.close),
  );
}

/**
 * When the closed period `at` falls in began: the latest closing time at or before `at` within the
 * past eight days; null when the hotel was not open in that time (always closed).
 */
export function closedSince(h: BusinessHours, at: Date): Date | null {
  const now = at.getTime();
  const l = local(now, h.timezone);
  let latest: number | null = null;
  for (let back = 0; back <= 8 && latest === null; back++) {
    const day = new Date(Date.UTC(l.y, l.m - 1, l.d - back));
    const [y, m, d] = [day.getUTCFullYear(), day.getUTCMonth() + 1, day.getUTCDate()];
    for (const iv of h.days[dayName(y, m, d)] ?? []) {
      const c = closeMinutes(iv.close);
      const t = c === 1440 ? instantOf(y, m, d + 1, 0, h.timezone) : instantOf(y, m, d, c, h.timezone);
      if (t <= now && (latest === null || t > latest)) latest = t;
    }
  }
  return latest === null ? null : new Date(latest);
}
