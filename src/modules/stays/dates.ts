// Owns the calendar of stays: whether a YYYY-MM-DD names a real day, and which day it is now in
// the hotel's time zone (the `hotel` setting), the "today" a guest's current stay is judged by.
import type { Executor } from '../../db/types.js';
import { formatsPerZone } from '../../lib/zone-formats.js';
import { getSetting } from '../settings/repository.js';

/** Whether `day` (already YYYY-MM-DD in form) is a day of the Gregorian calendar: no 2026-02-30. */
export function isCalendarDay(day: string): boolean {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(day);
  if (m === null) return false;
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (y < 1900 || mo < 1 || mo > 12 || d < 1) return false;
  const date = new Date(Date.UTC(y, mo - 1, d));
  return date.getUTCMonth() === mo - 1 && date.getUTCDate() === d;
}

// Every read of a guest or conversation asks for the hotel's today: the formatter is kept per zone.
// en-CA formats a date as YYYY-MM-DD.
const dayFormat = formatsPerZone('en-CA', { year: 'numeric', month: '2-digit', day: '2-digit' });

/** The day `at` falls on in `timeZone`, as YYYY-MM-DD. */
export function dayIn(timeZone: string, at: Date = new Date()): string {
  return dayFormat(timeZone).format(at);
}

export interface HotelClock {
  timezone: string;
  checkInTime: string;
  checkOutTime: string;
}

export const DEFAULT_CHECK_IN_TIME = '15:00';
export const DEFAULT_CHECK_OUT_TIME = '11:00';

/** The hotel's time zone and its check-in and check-out times (a value saved without them: defaults). */
export async function hotelClock(db: Executor): Promise<HotelClock> {
  const v = ((await getSetting(db, 'hotel'))?.value ?? {}) as Partial<HotelClock>;
  return {
    timezone: v.timezone ?? 'UTC',
    checkInTime: v.checkInTime ?? DEFAULT_CHECK_IN_TIME,
    checkOutTime: v.checkOutTime ?? DEFAULT_CHECK_OUT_TIME,
  };
}

/** Today in the hotel's time zone. */
export async function hotelToday(db: Executor): Promise<string> {
  return dayIn((await hotelClock(db)).timezone);
}
