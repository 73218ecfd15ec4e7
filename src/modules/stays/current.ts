// Owns a guest's current stay as guests and conversations show it (docs/stays.md): the stay in
// house, else the booked stay with the earliest checkIn whose checkOut is after the hotel's today,
// else null. A list page asks once for all its guests (one statement on stays_guest_idx), never
// once per row.
import { sql } from 'kysely';
import { type Param, prepared } from '../../db/prepared.js';
import type { Executor } from '../../db/types.js';
import { hotelToday } from './dates.js';
import type { StaySummaryView } from './schemas.js';

type Summary = NonNullable<StaySummaryView>;

const DAY_MS = 86_400_000;
const utcDay = (t: number) => new Date(t).toISOString().slice(0, 10);

/**
 * The guests' stays that may be current: in house, or ending after `after`. Prepared with the
 * guests as one parameter (a JSON array on SQLite, a text array on PostgreSQL), so a page of any
 * size runs the same statement. The status is tested in JavaScript rather than in SQL: a status
 * term lets SQLite (which plans without statistics) read stays_status_idx, every booked stay of the
 * hotel (27 ms at 24,000 stays), where the guests' own index entries are a few each (0.25 ms).
 */
const candidates = prepared((db, p: Param<{ ids: string | readonly string[]; after: string }>) =>
  db
    .selectFrom('stays')
    .select(['id', 'guest_id', 'room', 'check_in', 'check_out', 'status'])
    .where(
      db.dialect === 'postgres'
        ? sql<boolean>`guest_id = any(${p('ids')}::text[])`
        : sql<boolean>`guest_id in (select value from json_each(${p('ids')}))`,
    )
    .where((eb) => eb.or([eb('check_out', '>', p('after')), eb('status', '=', 'in_house')]))
    .orderBy('guest_id')
    .orderBy('check_in')
    .orderBy('id'),
);

/** The current stay of each guest named (guests without one are absent from the map). */
export async function currentStays(db: Executor, guestIds: readonly string[]): Promise<Map<string, Summary>> {
  const out = new Map<string, Summary>();
  const ids = [...new Set(guestIds)];
  if (ids.length === 0) return out;
  // Every zone's today is UTC's yesterday, today or tomorrow: the stays ending after UTC's yesterday
  // hold every candidate, and one ending after UTC's tomorrow ends after the hotel's today
  // whatever its zone. Only a booked stay ending between the two needs the hotel's today (its
  // setting read); most pages have none and skip that read.
  const now = Date.now();
  const after = utcDay(now - DAY_MS);
  const surely = utcDay(now + DAY_MS);
  const rows = await db.run(candidates, { ids: db.dialect === 'postgres' ? ids : JSON.stringify(ids), after });
  let today: string | undefined;
  for (const r of rows) {
    if (r.status !== 'in_house' && r.status !== 'booked') continue;
    if (r.status === 'booked' && r.check_out <= surely) {
      today ??= await hotelToday(db);
      if (r.check_out <= today) continue;
    }
    const have = out.get(r.guest_id);
    // In house wins over booked; among equals the earliest checkIn (rows come in that order).
    if (have !== undefined && (have.status === 'in_house' || r.status !== 'in_house')) continue;
    out.set(r.guest_id, { id: r.id, room: r.room, checkIn: r.check_in, checkOut: r.check_out, status: r.status });
  }
  return out;
}

/** One guest's current stay, or null. */
export async function currentStay(db: Executor, guestId: string): Promise<StaySummaryView> {
  return (await currentStays(db, [guestId])).get(guestId) ?? null;
}

/** Each record with `stay`: its guest's current stay, all read in one statement. */
export async function withStays<T extends object>(
  db: Executor,
  records: readonly T[],
  guestOf: (r: T) => string,
): Promise<(T & { stay: StaySummaryView })[]> {
  const stays = await currentStays(db, records.map(guestOf));
  return records.map((r) => ({ ...r, stay: stays.get(guestOf(r)) ?? null }));
}
