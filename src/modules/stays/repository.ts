// Owns stay rows: reads, writes, the list of stays (checkIn then id, every filter a range of one
// index, migration 026) and the mapping of a row to its API shape.
import { sql } from 'kysely';
import { paginate } from '../../db/paginate.js';
import { nowIso, toIso } from '../../db/store.js';
import type { Executor, StayTable } from '../../db/types.js';
import { newId } from '../../lib/ids.js';
import type { StayFilterQuery, StayStatus, StayView } from './schemas.js';

export const COLUMNS = [
  'id',
  'guest_id',
  'room',
  'check_in',
  'check_out',
  'status',
  'adults',
  'children',
  'notes',
  'external_ref',
  'created_at',
  'updated_at',
] as const;

export type StayRow = Pick<StayTable, (typeof COLUMNS)[number]>;

export function toStay(row: StayRow): StayView {
  return {
    id: row.id,
    guestId: row.guest_id,
    room: row.room,
    checkIn: row.check_in,
    checkOut: row.check_out,
    status: row.status,
    adults: Number(row.adults),
    children: Number(row.children),
    notes: row.notes,
    externalRef: row.external_ref,
    createdAt: toIso(row.created_at),
    updatedAt: toIso(row.updated_at),
  };
}

export async function findStay(db: Executor, id: string): Promise<StayView | undefined> {
  const row = await db.selectFrom('stays').select(COLUMNS).where('id', '=', id).executeTakeFirst();
  return row && toStay(row);
}

export async function findStayByRef(db: Executor, ref: string): Promise<StayView | undefined> {
  const row = await db.selectFrom('stays').select(COLUMNS).where('external_ref', '=', ref).executeTakeFirst();
  return row && toStay(row);
}

/** A stay's values as the service settled them: every field, its defaults filled in. */
export interface StayValues {
  guestId: string;
  room: string | null;
  checkIn: string;
  checkOut: string;
  status: StayStatus;
  adults: number;
  children: number;
  notes: string | null;
  externalRef: string | null;
}

const columnsOf = (v: StayValues) => ({
  guest_id: v.guestId,
  room: v.room,
  check_in: v.checkIn,
  check_out: v.checkOut,
  status: v.status,
  adults: v.adults,
  children: v.children,
  notes: v.notes,
  external_ref: v.externalRef,
});

export async function insertStay(db: Executor, v: StayValues): Promise<StayView> {
  const now = nowIso();
  const row: StayRow = { id: newId('sty'), ...columnsOf(v), created_at: now, updated_at: now };
  await db.insertInto('stays').values(row).execute();
  return toStay(row);
}

/** Writes every field of the stay; returns it as stored. */
export async function writeStay(db: Executor, id: string, v: StayValues): Promise<StayView> {
  await db
    .updateTable('stays')
    .set({ ...columnsOf(v), updated_at: nowIso() })
    .where('id', '=', id)
    .execute();
  return (await findStay(db, id))!;
}

export interface StayFilter extends StayFilterQuery {
  /** A staff-role caller: only stays of guests of their conversations and tasks. */
  owner?: string;
}

const KEYS = ['guestId', 'status', 'room', 'externalRef', 'checkInFrom', 'checkInTo', 'on', 'owner'] as const;

// biome-ignore lint/suspicious/noExplicitAny: the stays table, as the list primitive composes it
function narrowed(q: any, f: StayFilter, p: (name: string) => never) {
  if (f.guestId !== undefined) q = q.where('guest_id', '=', p('guestId'));
  if (f.status !== undefined) q = q.where('status', '=', p('status'));
  if (f.room !== undefined) q = q.where('room', '=', p('room'));
  if (f.externalRef !== undefined) q = q.where('external_ref', '=', p('externalRef'));
  if (f.checkInFrom !== undefined) q = q.where('check_in', '>=', p('checkInFrom'));
  if (f.checkInTo !== undefined) q = q.where('check_in', '<=', p('checkInTo'));
  if (f.on !== undefined) {
    // Booked or stayed that night: the stays that end after it and began by it, still on.
    q = q
      .where('check_out', '>', p('on'))
      .where('check_in', '<=', p('on'))
      .where('status', 'not in', ['cancelled', 'no_show']);
  }
  if (f.owner !== undefined) {
    q = q.where(sql<boolean>`guest_id in (select guest_id from staff_guests where staff_id = ${p('owner')})`);
  }
  return q;
}

/** Stays by checkIn, then id (oldest arrival first). */
export const listStays = paginate<StayFilter, StayRow>({
  name: 'stays',
  from: (db) => db.selectFrom('stays'),
  where: (q, f, p) => narrowed(q, f, p),
  columns: (q) => q.select(COLUMNS),
  order: ['check_in', 'id'],
  direction: 'asc',
  keyOf: (row) => [row.check_in, row.id],
  count: (x, f, p) => narrowed(x.selectFrom('stays'), f, p).select(sql<number>`count(*)`.as('n')),
  shapeOf: (f) => KEYS.map((k) => (f[k] === undefined ? '-' : k)).join(','),
  values: (f) => Object.fromEntries(KEYS.map((k) => [k, f[k]])),
});

/** The guest a stay belongs to; undefined when the stay does not exist. */
export function findStayGuest(db: Executor, id: string) {
  return db.selectFrom('stays').select(['id', 'guest_id']).where('id', '=', id).executeTakeFirst();
}

/** The guest with this externalRef, if any. */
export function findGuestIdByRef(db: Executor, ref: string) {
  return db.selectFrom('guests').select('id').where('external_ref', '=', ref).executeTakeFirst();
}

/** Whether a guest with this id exists. */
export async function guestExists(db: Executor, id: string): Promise<boolean> {
  return (await db.selectFrom('guests').select('id').where('id', '=', id).executeTakeFirst()) !== undefined;
}
