// Owns a guest's current stay as guests and conversations show it (docs/stays.md): the stay in
// house, else the booked stay with the earliest checkIn whose checkOut is after the hotel's today,
// else null. A list page asks once for all its guests (one statement on stays_guest_idx), never
// once per row.
import { sql } from 'kysely';
import { type Param, type Prepared, prepared } from '../../db/prepared.js';
import type { Executor } from '../../db/types.js';
import { hotelToday } from './dates.js';
import type { StaySummaryView } from './schemas.js';

type Summary = NonNullable<StaySummaryView>;

const DAY_MS = 86_400_000;
const utcDay = (t: number) => new Date(t).toISOString().slice(0, 10);

type Candidate = {
  id: string;
  guest_id: string;
  room: string | null;
  check_in: string;
  check_out: string;
  status: string;
};

/**
 * The guests' stays that may be current: in house, or ending after `after`. The status is tested
 * in JavaScript rather than in SQL: a status term lets SQLite (which plans without statistics) read
 * stays_status_idx, every booked stay of the hotel (27 ms at 24,000 stays), where the guests' own
 * index entries are a few each (0.25 ms).
 */
const stays = (db: Executor) =>
  db.selectFrom('stays').select(['id', 'guest_id', 'room', 'check_in', 'check_out', 'status']);
const order = <Q extends { orderBy(c: 'guest_id' | 'check_in' | 'id'): Q }>(q: Q) =>
  q.orderBy('guest_id').orderBy('check_in').orderBy('id');

/** PostgreSQL: one prepared statement for any number of guests (a text array). */
const candidatesPg = prepared((db, p: Param<{ ids: readonly string[]; after: string }>) =>
  order(
    stays(db)
      .where(sql<boolean>`guest_id = any(${p('ids')}::text[])`)
      .where((eb) => eb.or([eb('check_out', '>', p('after')), eb('status', '=', 'in_house')])),
  ),
);

/**
 * SQLite: a statement prepared per number of guests (an `in` list, as a page has at most 100), so
 * the plan is the same index seek per guest; more guests than that are passed as one JSON array.
 */
const MAX_LISTED = 100;
const candidatesSqlite = new Map<number, Prepared<Record<string, string>, Candidate>>();
const candidatesJson = prepared((db, p: Param<{ ids: string; after: string }>) =>
  order(
    stays(db)
      .where(sql<boolean>`guest_id in (select value from json_each(${p('ids')}))`)
      .where((eb) => eb.or([eb('check_out', '>', p('after')), eb('status', '=', 'in_house')])),
  ),
);

function candidates(db: Executor, ids: readonly string[], after: string): Promise<Candidate[]> {
  if (db.dialect === 'postgres') return db.run(candidatesPg, { ids, after });
  if (ids.length > MAX_LISTED) return db.run(candidatesJson, { ids: JSON.stringify(ids), after });
  let q = candidatesSqlite.get(ids.length);
  if (q === undefined) {
    const n = ids.length;
    q = prepared((x, p: Param<Record<string, string>>) =>
      order(
        stays(x)
          .where(
            'guest_id',
            'in',
            Array.from({ length: n }, (_, i) => p(`id${i}`)),
          )
          .where((eb) => eb.or([eb('check_out', '>', p('after')), eb('status', '=', 'in_house')])),
      ),
    );
    candidatesSqlite.set(n, q);
  }
  const params: Record<string, string> = { after };
  ids.forEach((id, i) => {
    params[`id${i}`] = id;
  });
  return db.run(q, params);
}

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
  const rows = await candidates(db, ids, after);
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
