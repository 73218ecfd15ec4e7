// Owns the rules of guests: who may see which guest (a staff member, only guests of their own
// conversations and tasks), and that e-mail (any case) and phone are unique: a second guest with
// either is a 409 naming the existing guest. Every write here is one transaction, its events in it.
import { isDeepStrictEqual } from 'node:util';
import type { Static } from 'typebox';
import { isUniqueViolation, type Store } from '../../db/store.js';
import type { Executor } from '../../db/types.js';
import { isElevated, visibleTo } from '../../lib/access.js';
import type { AuthUser } from '../../lib/auth.js';
import { type AppError, conflict, type FieldError, notFound, validation } from '../../lib/errors.js';
import { recordEvents, staffActor } from '../events/emit.js';
import { type Outbox, withEvents } from '../events/outbox.js';
import {
  type Attributes,
  findConflicts,
  findGuest,
  findGuestByRef,
  type GuestConflict,
  type GuestView,
  insertGuest,
  isGuestOfStaff,
  uniqueTags,
  updateGuest as updateGuestRow,
} from './repository.js';
import {
  ATTRIBUTE_KEY,
  type CreateGuestBody,
  MAX_ATTRIBUTES,
  type PutGuestBody,
  type UpdateGuestBody,
} from './schemas.js';

export type CreateGuest = Static<typeof CreateGuestBody>;
type UpdateGuest = Static<typeof UpdateGuestBody>;
export type PutGuest = Static<typeof PutGuestBody>;
type Contact = { email?: string | null; phone?: string | null; externalRef?: string | null };
type AttributeInput = Record<string, string | number | boolean | null>;

/**
 * `current` with `input` merged in (docs/stays.md, guests from a PMS): a null value removes its
 * key. Keys of the wrong shape, and more than MAX_ATTRIBUTES keys after the merge, are refused,
 * each problem naming its key.
 */
export function mergeAttributes(current: Attributes, input: object | undefined): Attributes | undefined {
  if (input === undefined) return undefined;
  const problems: FieldError[] = [];
  const out: Attributes = { ...current };
  for (const [key, value] of Object.entries(input as AttributeInput)) {
    if (!ATTRIBUTE_KEY.test(key)) {
      problems.push({
        field: `attributes.${key.slice(0, 60)}`,
        message: 'is not an attribute key: lowercase letters, digits and _, starting with a letter, at most 40',
      });
    } else if (value === null) delete out[key];
    else out[key] = value;
  }
  if (problems.length === 0 && Object.keys(out).length > MAX_ATTRIBUTES) {
    problems.push({ field: 'attributes', message: `may hold at most ${MAX_ATTRIBUTES} keys, counted after the merge` });
  }
  if (problems.length > 0) throw validation(problems, `${problems[0]!.field}: ${problems[0]!.message}`);
  return out;
}

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
  const attributes = mergeAttributes({}, body.attributes);
  return writeGuest(store, body, undefined, async (tx, outbox) => {
    await assertNoConflict(tx, body);
    const guest = await insertGuest(tx, { ...body, attributes });
    recordEvents(outbox, 'guest', staffActor(user), null, guest);
    return guest;
  });
}

export function updateGuest(store: Store, user: AuthUser, id: string, body: UpdateGuest): Promise<GuestView> {
  return writeGuest(store, body, id, async (tx, outbox) => {
    const current = await findGuest(tx, id);
    if (current === undefined) throw notFound('Guest', id);
    await assertNoConflict(tx, body, id);
    const attributes = mergeAttributes(current.attributes as Attributes, body.attributes);
    const after = await updateGuestRow(tx, current, { ...body, attributes });
    recordEvents(outbox, 'guest', staffActor(user), current, after);
    return after;
  });
}

/** Whether setting the fields `c` gives would leave the guest as it is. */
function unchanged(g: GuestView, c: Omit<PutGuest, 'attributes'> & { attributes?: Attributes }): boolean {
  const same = (a: unknown, b: unknown) => b === undefined || isDeepStrictEqual(a, b);
  return (
    same(g.name, c.name) &&
    same(g.email, c.email) &&
    same(g.phone, c.phone) &&
    same(g.tags, c.tags === undefined ? undefined : uniqueTags(c.tags)) &&
    same(g.notes, c.notes) &&
    same(g.attributes, c.attributes)
  );
}

/**
 * Creates the guest with this externalRef, or sets the fields the body gives on it (those left out
 * are kept; attributes merge as on PATCH): `created` says which. Two callers creating one
 * reference at once meet at its unique index; the loser's retry then finds the guest.
 */
export async function upsertGuest(
  store: Store,
  user: AuthUser,
  externalRef: string,
  body: PutGuest,
): Promise<{ guest: GuestView; created: boolean }> {
  const once = () =>
    withEvents(store, async (tx, outbox) => {
      const current = await findGuestByRef(tx, externalRef);
      await assertNoConflict(tx, body, current?.id);
      if (current === undefined) {
        const guest = await insertGuest(tx, { ...body, externalRef, attributes: mergeAttributes({}, body.attributes) });
        recordEvents(outbox, 'guest', staffActor(user), null, guest);
        return { guest, created: true };
      }
      const attributes = mergeAttributes(current.attributes as Attributes, body.attributes);
      // The same profile again (a nightly sync) is left as it is: no write, no event, the same ETag.
      if (unchanged(current, { ...body, attributes })) return { guest: current, created: false };
      const guest = await updateGuestRow(tx, current, { ...body, attributes });
      recordEvents(outbox, 'guest', staffActor(user), current, guest);
      return { guest, created: false };
    });
  try {
    return await once();
  } catch (err) {
    if (!isUniqueViolation(err)) throw err;
  }
  // The reference was taken meanwhile (now an update), or the e-mail or phone was (a 409).
  try {
    return await once();
  } catch (err) {
    if (!isUniqueViolation(err)) throw err;
    const found = await findConflicts(store, { ...body, externalRef });
    throw found.length > 0 ? conflictError(found) : conflict('Another guest already has this email or phone');
  }
}
