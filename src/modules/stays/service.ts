// Owns the rules of stays (docs/stays.md): a stay's guest exists (named by id or by the guest's
// externalRef), its days are real calendar days with checkOut after checkIn, its externalRef is
// unique; admins and managers write, a staff member reads the stays of guests they may see. Every
// write is one transaction with its event and its journey steps planned again (journey-steps.ts).
import { isUniqueViolation, type Store } from '../../db/store.js';
import type { Executor } from '../../db/types.js';
import { isElevated } from '../../lib/access.js';
import type { AuthUser } from '../../lib/auth.js';
import { conflict, type FieldError, forbidden, notFound, validation } from '../../lib/errors.js';
import { recordEvents, staffActor } from '../events/emit.js';
import { withEvents } from '../events/outbox.js';
import { isGuestOfStaff } from '../guests/repository.js';
import { isCalendarDay } from './dates.js';
import { type Jobs, markStatusMoment, planJourneys } from './journey-steps.js';
import {
  findGuestIdByRef,
  findStay,
  findStayByRef,
  guestExists,
  insertStay,
  type StayValues,
  writeStay,
} from './repository.js';
import type { CreateStayInput, PutStayInput, StayView, UpdateStayInput } from './schemas.js';

const invalid = (problems: FieldError[]) => validation(problems, `${problems[0]!.field}: ${problems[0]!.message}`);

/** The guest a body names, by id or by externalRef, or the problem with it. */
async function guestOf(
  db: Executor,
  body: { guestId?: string; guestExternalRef?: string },
): Promise<{ id?: string; problem?: FieldError }> {
  if (body.guestId !== undefined && body.guestExternalRef !== undefined) {
    return { problem: { field: 'guestExternalRef', message: 'must not be given with guestId' } };
  }
  if (body.guestId !== undefined) {
    return (await guestExists(db, body.guestId))
      ? { id: body.guestId }
      : { problem: { field: 'guestId', message: `guest ${body.guestId} does not exist` } };
  }
  if (body.guestExternalRef !== undefined) {
    const g = await findGuestIdByRef(db, body.guestExternalRef);
    return g !== undefined
      ? { id: g.id }
      : { problem: { field: 'guestExternalRef', message: `no guest has externalRef ${body.guestExternalRef}` } };
  }
  return { problem: { field: 'guestId', message: 'is required (or give guestExternalRef)' } };
}

/** Problems with a stay's days: each a real calendar day, checkOut after checkIn. */
function dayProblems(checkIn: string, checkOut: string): FieldError[] {
  const out: FieldError[] = [];
  if (!isCalendarDay(checkIn)) out.push({ field: 'checkIn', message: `${checkIn} is not a day of the calendar` });
  if (!isCalendarDay(checkOut)) out.push({ field: 'checkOut', message: `${checkOut} is not a day of the calendar` });
  if (out.length === 0 && checkOut <= checkIn) out.push({ field: 'checkOut', message: 'must be after checkIn' });
  return out;
}

/** The stay's values from a whole body (create or replace): fields left out take their defaults. */
async function valuesOf(db: Executor, body: PutStayInput, externalRef: string | null): Promise<StayValues> {
  const guest = await guestOf(db, body);
  const problems = [...(guest.problem ? [guest.problem] : []), ...dayProblems(body.checkIn, body.checkOut)];
  if (problems.length > 0) throw invalid(problems);
  return {
    guestId: guest.id!,
    room: body.room ?? null,
    checkIn: body.checkIn,
    checkOut: body.checkOut,
    status: body.status ?? 'booked',
    adults: body.adults ?? 1,
    children: body.children ?? 0,
    notes: body.notes ?? null,
    externalRef,
  };
}

const sameValues = (s: StayView, v: StayValues) =>
  s.guestId === v.guestId &&
  s.room === v.room &&
  s.checkIn === v.checkIn &&
  s.checkOut === v.checkOut &&
  s.status === v.status &&
  s.adults === v.adults &&
  s.children === v.children &&
  s.notes === v.notes &&
  s.externalRef === v.externalRef;

const refTaken = (existing: StayView) =>
  conflict(`Another stay already has externalRef ${existing.externalRef}`, [
    { field: 'externalRef', message: `is already used by stay ${existing.id}`, existingId: existing.id },
  ]);

/** The stay if the caller may see it: a staff member, a stay of a guest of theirs. */
export async function visibleStay(db: Executor, user: AuthUser, id: string): Promise<StayView> {
  const stay = await findStay(db, id);
  if (stay === undefined) throw notFound('Stay', id);
  if (!isElevated(user) && !(await isGuestOfStaff(db, stay.guestId, user.id))) {
    throw forbidden('This stay is of a guest not assigned to you');
  }
  return stay;
}

export function createStay(store: Store, user: AuthUser, body: CreateStayInput, jobs: Jobs = null): Promise<StayView> {
  return withEvents(store, async (tx, outbox) => {
    const { externalRef, ...rest } = body;
    const values = await valuesOf(tx, rest, externalRef ?? null);
    if (values.externalRef !== null) {
      const existing = await findStayByRef(tx, values.externalRef);
      if (existing !== undefined) throw refTaken(existing);
    }
    const stay = await insertStay(tx, values);
    await markStatusMoment(tx, stay.id, null, stay.status);
    await planJourneys(tx, outbox, jobs, stay.id);
    recordEvents(outbox, 'stay', staffActor(user), null, stay);
    return stay;
  });
}

/**
 * Creates the stay with this externalRef, or replaces it: `created` says which. Two callers
 * creating one reference at once meet at its unique index; the loser then replaces it.
 */
export async function upsertStay(
  store: Store,
  user: AuthUser,
  externalRef: string,
  body: PutStayInput,
  jobs: Jobs = null,
): Promise<{ stay: StayView; created: boolean }> {
  const once = () =>
    withEvents(store, async (tx, outbox) => {
      const values = await valuesOf(tx, body, externalRef);
      const before = await findStayByRef(tx, externalRef);
      if (before === undefined) {
        const stay = await insertStay(tx, values);
        await markStatusMoment(tx, stay.id, null, stay.status);
        await planJourneys(tx, outbox, jobs, stay.id);
        recordEvents(outbox, 'stay', staffActor(user), null, stay);
        return { stay, created: true };
      }
      // The same stay again (a nightly sync) is left as it is: no write, no event, the same ETag.
      if (sameValues(before, values)) return { stay: before, created: false };
      const stay = await writeStay(tx, before.id, values);
      await markStatusMoment(tx, stay.id, before.status, stay.status);
      await planJourneys(tx, outbox, jobs, stay.id);
      recordEvents(outbox, 'stay', staffActor(user), before, stay);
      return { stay, created: false };
    });
  try {
    return await once();
  } catch (err) {
    if (!isUniqueViolation(err)) throw err;
    return once();
  }
}

export function updateStay(
  store: Store,
  user: AuthUser,
  id: string,
  changes: UpdateStayInput,
  jobs: Jobs = null,
): Promise<StayView> {
  return withEvents(store, async (tx, outbox) => {
    const before = await findStay(tx, id);
    if (before === undefined) throw notFound('Stay', id);
    const problems: FieldError[] = [];
    if (changes.guestId !== undefined && !(await guestExists(tx, changes.guestId))) {
      problems.push({ field: 'guestId', message: `guest ${changes.guestId} does not exist` });
    }
    const checkIn = changes.checkIn ?? before.checkIn;
    const checkOut = changes.checkOut ?? before.checkOut;
    problems.push(...dayProblems(checkIn, checkOut));
    if (problems.length > 0) throw invalid(problems);
    const externalRef = changes.externalRef !== undefined ? changes.externalRef : before.externalRef;
    if (externalRef !== null && externalRef !== before.externalRef) {
      const existing = await findStayByRef(tx, externalRef);
      if (existing !== undefined) throw refTaken(existing);
    }
    const after = await writeStay(tx, id, {
      guestId: changes.guestId ?? before.guestId,
      room: changes.room !== undefined ? changes.room : before.room,
      checkIn,
      checkOut,
      status: changes.status ?? before.status,
      adults: changes.adults ?? before.adults,
      children: changes.children ?? before.children,
      notes: changes.notes !== undefined ? changes.notes : before.notes,
      externalRef,
    });
    await markStatusMoment(tx, id, before.status, after.status);
    await planJourneys(tx, outbox, jobs, id);
    recordEvents(outbox, 'stay', staffActor(user), before, after);
    return after;
  });
}
