// Owns the calendar of stays: whether a YYYY-MM-DD names a real day, and which day it is now in
// the hotel's time zone (the `hotel` setting), the "today" a guest's current stay is judged by.

import { type Param, prepared } from '../../db/prepared.js';
import { fromJson } from '../../db/store.js';
import type { Executor } from '../../db/types.js';
import { formatsPerZone } from '../../lib/zone-formats.js';
import { SETTINGS } from '../settings/registry.js';

/** Whether `day` (already YYYY-MM-DD in form) is a day of the Gregorian calendar: no 2026-02-30. */
export function isCalendarDay(day: string): boolean {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(day);
  if (m === null) return false;
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (y < 1900 || mo < 1 || mo > 12 || d < 1) return false;
  const date = new Date(Date.UTC(y, mo - 1, d));
  return date.getUTCMonth() === mo - 1 && date.getUTCDate() === d;
}

// en-CA formats a date as YYYY-MM-DD.
const dayFormat = formatsPerZone('en-CA', { year: 'numeric', month: '2-digit', day: '2-digit' });

const QUARTER_HOUR_MS = 900_000;

/** The last day formatted for a zone, which holds for the whole UTC quarter-hour of `from`. */
interface ZoneDay {
  day: string;
  from: number;
}

// Every read of a guest or conversation asks for the hotel's today. Every zone's offset (and each
// daylight-saving change) is a whole number of quarter-hours, so a zone's day changes only on a UTC
// quarter-hour: the day formatted for a moment holds for the rest of its quarter-hour, and
// formatting (the costly part) is done once per zone and quarter-hour.
const DAYS = new Map<string, ZoneDay>();

/** The day `at` falls on in `timeZone`, as YYYY-MM-DD. */
export function dayIn(timeZone: string, at: Date = new Date()): string {
  const t = at.getTime();
  const from = Math.floor(t / QUARTER_HOUR_MS) * QUARTER_HOUR_MS;
  const z = DAYS.get(timeZone);
  if (z !== undefined && z.from === from) return z.day;
  // A moment outside the kept quarter-hour (or an invalid date: NaN never equals) is formatted.
  const day = dayFormat(timeZone).format(at);
  if (Number.isNaN(from)) return day;
  // Zones come from the validated hotel setting: few; the bound only guards the map.
  if (z === undefined && DAYS.size >= 100) DAYS.clear();
  DAYS.set(timeZone, { day, from });
  return day;
}

export interface HotelClock {
  timezone: string;
  checkInTime: string;
  checkOutTime: string;
}

export const DEFAULT_CHECK_IN_TIME = '15:00';
export const DEFAULT_CHECK_OUT_TIME = '11:00';

const hotelValue = prepared((db, p: Param<{ key: string }>) =>
  db.selectFrom('settings').select('value').where('key', '=', p('key')),
);

/**
 * The last stored `hotel` value read (its text, null while none is stored) and the clock it gave.
 * The setting is read on every call (so a change on any instance counts at once); only parsing it
 * again is skipped while its text is the same, as it is on nearly every list page (docs/performance.md).
 */
let lastHotel: { text: unknown; clock: HotelClock } | undefined;

/** The hotel's time zone and its check-in and check-out times (a value saved without them: defaults). */
export async function hotelClock(db: Executor): Promise<HotelClock> {
  return hotelClockOf((await db.first(hotelValue, { key: 'hotel' }))?.value ?? null);
}

/** hotelClock from the `hotel` setting's stored text, read by the caller (null: none stored). */
export function hotelClockOf(text: unknown): HotelClock {
  if (lastHotel !== undefined && lastHotel.text === text) return { ...lastHotel.clock };
  const v = (text === null ? (SETTINGS.hotel?.default ?? {}) : (fromJson(text) ?? {})) as Partial<HotelClock>;
  const clock = {
    timezone: v.timezone ?? 'UTC',
    checkInTime: v.checkInTime ?? DEFAULT_CHECK_IN_TIME,
    checkOutTime: v.checkOutTime ?? DEFAULT_CHECK_OUT_TIME,
  };
  lastHotel = { text, clock };
  return { ...clock };
}

/** Today in the hotel's time zone. */
export async function hotelToday(db: Executor): Promise<string> {
  return dayIn((await hotelClock(db)).timezone);
}

/**
 * The first moment (epoch ms) after `at` at which any zone's day may differ from its day at `at`:
 * the next UTC quarter-hour (see DAYS). What was read with the hotel's today at `at` holds until then.
 */
export const dayHoldsUntil = (at: number): number =>
  Math.floor(at / QUARTER_HOUR_MS) * QUARTER_HOUR_MS + QUARTER_HOUR_MS;
