// Owns the rules of staff accounts: who may see whom (a staff-role caller: only themselves), what an
// API key may do to staff (members of role staff only, never a password: docs/decisions.md, Integration safety), that a
// department is one the `departments` setting lists, that an e-mail is used once, and that the last
// active admin cannot be demoted or deactivated. Every write is one transaction with its events.
import type { Static } from 'typebox';
import { isUniqueViolation, type Store } from '../../db/store.js';
import type { Executor } from '../../db/types.js';
import { visibleTo } from '../../lib/access.js';
import type { AuthUser } from '../../lib/auth.js';
import { conflict, forbidden } from '../../lib/errors.js';
import { generatePassword, hashPassword } from '../../lib/password.js';
import type { Counter } from '../../lib/rate-limiter.js';
import type { AuditTrail } from '../audit/trail.js';
import { recordEvents, staffActor } from '../events/emit.js';
import { withEvents } from '../events/outbox.js';
import { checkDepartment } from '../settings/service.js';
import {
  countActiveAdminsForUpdate,
  findStaff,
  insertStaff,
  type StaffView,
  updateStaff as updateStaffRow,
} from './repository.js';
import type { CreateStaffBody, UpdateStaffBody } from './schemas.js';

/** The staff member if the caller may see them (404 missing, 403 a staff-role caller's colleague). */
export async function visibleStaff(db: Executor, user: AuthUser, id: string): Promise<StaffView> {
  return visibleTo(user, await findStaff(db, id), (s) => s.id, 'Staff member', id);
}

/**
 * An API key acts with an admin's reach over its scopes, but never up to an admin's power: a key
 * that could make an admin (or set a password it then logs in with) could mint keys and read the
 * audit log. So a key creates and changes members of role `staff` only and never sets a password.
 */
const KEY_STAFF_ONLY = 'An API key may create and change staff members of role staff only';
const keyMayNotTouch = () =>
  forbidden(`${KEY_STAFF_ONLY}: it may not change an admin or a manager, nor make anyone an admin or a manager`);

function checkKeyCreates(user: AuthUser, body: Static<typeof CreateStaffBody>): void {
  if (user.kind !== 'api_key') return;
  if (body.role !== 'staff') throw forbidden(`${KEY_STAFF_ONLY}; an admin creates admins and managers`);
  if (body.password !== undefined) {
    throw forbidden('An API key may not set a password: leave it out and hand over the temporaryPassword answered');
  }
}

/** Creates a staff member; without a password a one-time temporaryPassword is returned with it. */
export async function createStaff(
  store: Store,
  user: AuthUser,
  body: Static<typeof CreateStaffBody>,
  audit: AuditTrail,
): Promise<StaffView & { temporaryPassword?: string }> {
  checkKeyCreates(user, body);
  await checkDepartment(store, body.department);
  const temporaryPassword = body.password === undefined ? generatePassword() : undefined;
  const passwordHash = await hashPassword(body.password ?? temporaryPassword!);
  try {
    const staff = await withEvents(store, async (tx, outbox) => {
      const created = await insertStaff(tx, {
        name: body.name,
        email: body.email,
        role: body.role,
        department: body.department ?? null,
        passwordHash,
      });
      recordEvents(outbox, 'staff', staffActor(user), null, created);
      await audit.record(tx, 'staff.created', { type: 'staff', id: created.id });
      return created;
    });
    return temporaryPassword === undefined ? staff : { ...staff, temporaryPassword };
  } catch (err) {
    if (isUniqueViolation(err)) {
      throw conflict('A staff member with this email already exists', [
        { field: 'email', message: 'is already in use' },
      ]);
    }
    throw err;
  }
}

export async function updateStaff(
  store: Store,
  counter: Pick<Counter, 'bumpGeneration'>,
  user: AuthUser,
  id: string,
  body: Static<typeof UpdateStaffBody>,
  audit: AuditTrail,
): Promise<StaffView> {
  await checkDepartment(store, body.department);
  return withEvents(store, async (tx, outbox) => {
    const current = await visibleStaff(tx, user, id);
    const byKey = user.kind === 'api_key';
    if (byKey && (current.role !== 'staff' || (body.role ?? 'staff') !== 'staff')) throw keyMayNotTouch();
    const losesAdmin =
      current.role === 'admin' && current.active && (body.active === false || (body.role ?? 'admin') !== 'admin');
    if (losesAdmin && (await countActiveAdminsForUpdate(tx)) <= 1) {
      throw conflict('This is the last active admin; promote another admin first');
    }
    // A key's change applies only while the member is still of role staff: an admin promoting them
    // concurrently (PostgreSQL) wins, and the key is refused.
    const after = await updateStaffRow(tx, id, body, byKey ? 'staff' : undefined);
    if (after === undefined) throw keyMayNotTouch();
    // The gate keeps staff rows under the shared generation: every instance reads this one again.
    tx.onCommit(() => void counter.bumpGeneration());
    recordEvents(outbox, 'staff', staffActor(user), current, after);
    await audit.record(tx, 'staff.updated', { type: 'staff', id });
    return after;
  });
}
