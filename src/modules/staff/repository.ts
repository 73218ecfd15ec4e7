// Owns staff rows: reads, writes and the mapping of a row to its API shape (never the hash).
import type { Static } from 'typebox';
import { paginate } from '../../db/paginate.js';
import { type Param, prepared } from '../../db/prepared.js';
import { nowIso, toBool, toIso } from '../../db/store.js';
import type { Executor, StaffRow } from '../../db/types.js';
import type { Role } from '../../lib/auth.js';
import { newId } from '../../lib/ids.js';
import type { Staff } from './schemas.js';

export type StaffView = Static<typeof Staff>;

const COLUMNS = ['id', 'name', 'email', 'role', 'department', 'active', 'created_at', 'updated_at'] as const;
type StaffListRow = Pick<StaffRow, (typeof COLUMNS)[number]>;

export function toStaff(row: StaffListRow): StaffView {
  return {
    id: row.id,
    name: row.name,
    email: row.email,
    role: row.role,
    department: row.department,
    active: Boolean(row.active),
    createdAt: toIso(row.created_at),
    updatedAt: toIso(row.updated_at),
  };
}

// Prepared: GET /auth/me and every read of a member run it.
const staffById = prepared((db, p: Param<{ id: string }>) =>
  db.selectFrom('staff').select(COLUMNS).where('id', '=', p('id')),
);

export async function findStaff(db: Executor, id: string): Promise<StaffView | undefined> {
  const row = await db.first(staffById, { id });
  return row && toStaff(row);
}

export function findStaffForLogin(db: Executor, email: string) {
  return db
    .selectFrom('staff')
    .select([...COLUMNS, 'password_hash', 'tokens_valid_after'])
    .where('email_lower', '=', email.toLowerCase())
    .executeTakeFirst();
}

export function findPasswordHash(db: Executor, id: string) {
  return db.selectFrom('staff').select(['password_hash']).where('id', '=', id).executeTakeFirst();
}

export interface StaffFilter {
  role?: Role;
  department?: string;
  active?: boolean;
  /** Restricts the list to one member (a staff-role caller sees only themselves). */
  onlyId?: string;
}

/** Staff members by name, then id. */
export const listStaff = paginate<StaffFilter, StaffListRow>({
  name: 'staff',
  from: (db) => db.selectFrom('staff'),
  where(q, f, p) {
    if (f.role !== undefined) q = q.where('role', '=', p('role'));
    if (f.department !== undefined) q = q.where('department', '=', p('department'));
    if (f.active !== undefined) q = q.where('active', '=', p('active'));
    if (f.onlyId !== undefined) q = q.where('id', '=', p('onlyId'));
    return q;
  },
  columns: (q) => q.select(COLUMNS),
  order: ['name', 'id'],
  direction: 'asc',
  keyOf: (row) => [row.name, row.id],
  count(x, f, p) {
    let q = x.selectFrom('staff').select((eb) => eb.fn.countAll<number>().as('n'));
    if (f.role !== undefined) q = q.where('role', '=', p('role'));
    if (f.department !== undefined) q = q.where('department', '=', p('department'));
    if (f.active !== undefined) q = q.where('active', '=', p('active'));
    if (f.onlyId !== undefined) q = q.where('id', '=', p('onlyId'));
    return q;
  },
  shapeOf: (f) => [f.role, f.department, f.active, f.onlyId].map((v) => v !== undefined).join(),
  values: (f) => ({
    role: f.role,
    department: f.department,
    active: f.active === undefined ? undefined : toBool(f.active),
    onlyId: f.onlyId,
  }),
});

export interface NewStaffInput {
  name: string;
  email: string;
  role: Role;
  department: string | null;
  passwordHash: string;
}

export async function insertStaff(db: Executor, input: NewStaffInput): Promise<StaffView> {
  const now = nowIso();
  const row = {
    id: newId('stf'),
    name: input.name,
    email: input.email,
    email_lower: input.email.toLowerCase(),
    role: input.role,
    department: input.department,
    active: toBool(true),
    password_hash: input.passwordHash,
    tokens_valid_after: 0,
    created_at: now,
    updated_at: now,
  };
  await db.insertInto('staff').values(row).execute();
  return toStaff(row);
}

export interface StaffChanges {
  name?: string;
  role?: Role;
  department?: string | null;
  active?: boolean;
}

/** Applies the changes; with `onlyRole`, only while the member has that role (else undefined). */
export async function updateStaff(
  db: Executor,
  id: string,
  c: StaffChanges,
  onlyRole?: Role,
): Promise<StaffView | undefined> {
  let q = db
    .updateTable('staff')
    .set({
      ...(c.name !== undefined && { name: c.name }),
      ...(c.role !== undefined && { role: c.role }),
      ...(c.department !== undefined && { department: c.department }),
      ...(c.active !== undefined && { active: toBool(c.active) }),
      updated_at: nowIso(),
    })
    .where('id', '=', id);
  if (onlyRole !== undefined) q = q.where('role', '=', onlyRole);
  const r = await q.executeTakeFirst();
  return Number(r.numUpdatedRows) > 0 ? findStaff(db, id) : undefined;
}

export async function setPassword(db: Executor, id: string, passwordHash: string, tokensValidAfter: number) {
  await db
    .updateTable('staff')
    .set({ password_hash: passwordHash, tokens_valid_after: tokensValidAfter, updated_at: nowIso() })
    .where('id', '=', id)
    .execute();
}

export async function countActiveAdmins(db: Executor): Promise<number> {
  const r = await db
    .selectFrom('staff')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('role', '=', 'admin')
    .where('active', '=', toBool(true))
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

/**
 * Counts active admins inside a transaction that may remove one. On PostgreSQL the rows are locked
 * (FOR UPDATE) so two concurrent demotions cannot both see "another admin remains" and leave none;
 * SQLite runs one transaction at a time, so it needs no lock.
 */
export async function countActiveAdminsForUpdate(tx: Executor): Promise<number> {
  let q = tx
    .selectFrom('staff')
    .select('id')
    .where('role', '=', 'admin')
    .where('active', '=', toBool(true))
    .orderBy('id'); // one lock order for every transaction: no deadlocks
  if (tx.dialect === 'postgres') q = q.forUpdate();
  return (await q.execute()).length;
}

export async function countStaff(db: Executor): Promise<number> {
  const r = await db
    .selectFrom('staff')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(r.n);
}
