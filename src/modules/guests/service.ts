// Owns the rules of guests: who may see which guest (a staff member, only guests of their own
// conversations and tasks), and that e-mail (any case) and phone are unique: a second guest with
// either is a 409 naming the existing guest. Every write here is one transaction, its events in it.
import type { Static } from 'typebox';
import { isUniqueViolation, type Store } from '../../db/store.js';
import type { Executor } from '../../db/types.js';
import { isElevated, visibleTo } from '../../lib/access.js';
import type { AuthUser } from '../../lib/auth.js';
import { type AppError, conflict, notFound } from '../../lib/errors.js';
import { recordEvents, staffActor } from '../events/emit.js';
import { type Outbox, withEvents } from '../events/outbox.js';
import {
  findConflicts,
  findGuest,
  type GuestConflict,
  type GuestView,
  insertGuest,
  isGuestOfStaff,
  updateGuest as updateGuestRow,
} from './repository.js';
import type { CreateGuestBody, UpdateGuestBody } from './schemas.js';

export type CreateGuest = Static<typeof CreateGuestBody>;
type UpdateGuest = Static<typeof UpdateGuestBody>;
type Contact = { email?: string | null; phone?: string | null };

function conflictError(found: GuestConflict[]): AppError {
  const fields = found.map((c) => c.field).join(' and ');
  return conflict(`Another guest already has this ${fields}`, found);
}

async function assertNoConflict(db: Executor, values: Contact, exceptId?: string) {
  const found = await findConflicts(db, values, exceptId);
  if (found.length > 0) throw conflictError(found);
}

/**
 * Runs a write in its own transaction. A concurrent writer can take the e-mail or phone between
 * the check inside `work` and the write; the unique index then refuses it, and once the
 * transaction has rolled back (PostgreSQL answers nothing inside an aborted one) we name the winner.
 */
async function writeGuest(
  store: Store,
  values: Contact,
  exceptId: string | undefined,
  work: (tx: Executor, outbox: Outbox) => Promise<GuestView>,
): Promise<GuestView> {
  try {
    return await withEvents(store, work);
  } catch (err) {
    if (!isUniqueViolation(err)) throw err;
    const found = await findConflicts(store, values, exceptId);
    throw found.length > 0 ? conflictError(found) : conflict('Another guest already has this email or phone');
  }
}

/** The guest if the caller may see it: a staff member "owns" a guest through their assignments. */
export async function visibleGuest(store: Store, user: AuthUser, id: string): Promise<GuestView> {
  const guest = await findGuest(store, id);
  const mine = guest !== undefined && !isElevated(user) && (await isGuestOfStaff(store, id, user.id));
  return visibleTo(user, guest, () => (mine ? user.id : null), 'Guest', id);
}

export function createGuest(store: Store, user: AuthUser, body: CreateGuest): Promise<GuestView> {
  return writeGuest(store, body, undefined, async (tx, outbox) => {
    await assertNoConflict(tx, body);
    const guest = await insertGuest(tx, body);
    recordEvents(outbox, 'guest', staffActor(user), null, guest);
    return guest;
  });
}

export function updateGuest(store: Store, user: AuthUser, id: string, body: UpdateGuest): Promise<GuestView> {
  return writeGuest(store, body, id, async (tx, outbox) => {
    const current = await findGuest(tx, id);
    if (current === undefined) throw notFound('Guest', id);
    await assertNoConflict(tx, body, id);
    const after = await updateGuestRow(tx, current, body);
    recordEvents(outbox, 'guest', staffActor(user), current, after);
    return after;
  });
}
