// Owns the Intl.DateTimeFormat objects that read instants in a time zone: one per zone and use,
// kept. Making one is costly and holds native memory, and the hot paths (a guest's today, the
// business hours an inbound message is checked against, a report's buckets) ask for the same few
// zones again and again.

/** Zones come from validated settings and are few; past this many the cache starts again. */
const MAX_ZONES = 100;

/** A formatter per zone with these options, made on first use and kept. */
export function formatsPerZone(
  locale: string,
  options: Omit<Intl.DateTimeFormatOptions, 'timeZone'>,
): (timeZone: string) => Intl.DateTimeFormat {
  const byZone = new Map<string, Intl.DateTimeFormat>();
  return (timeZone) => {
    let f = byZone.get(timeZone);
    if (f === undefined) {
      f = new Intl.DateTimeFormat(locale, { ...options, timeZone });
      if (byZone.size >= MAX_ZONES) byZone.clear();
      byZone.set(timeZone, f);
    }
    return f;
  };
}

/** Numeric year, month, day, hour (0-23), minute and second of an instant, for formatToParts. */
export const wallClockFormat = formatsPerZone('en-US', {
  hourCycle: 'h23',
  year: 'numeric',
  month: 'numeric',
  day: 'numeric',
  hour: 'numeric',
  minute: 'numeric',
  second: 'numeric',
});
