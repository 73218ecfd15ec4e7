// Owns object-level access: a staff-role caller may only touch what is assigned to them.
// A record they may not see answers 403 if it exists and 404 if it does not.
import type { AuthUser } from './auth.js';
import { forbidden, notFound } from './errors.js';

export const isElevated = (user: AuthUser): boolean => user.role === 'admin' || user.role === 'manager';

/**
 * Returns the record if the caller may see it; throws NOT_FOUND when it is missing and
 * FORBIDDEN when a staff-role caller is not its owner.
 */
export function visibleTo<T>(
  user: AuthUser,
  record: T | undefined,
  ownerOf: (r: T) => string | null,
  what: string,
  id: string,
): T {
  if (record === undefined) throw notFound(what, id);
  if (!isElevated(user) && ownerOf(record) !== user.id) {
    throw forbidden(`This ${what.toLowerCase()} is not assigned to you`);
  }
  return record;
}

/** The owner filter a list applies for the caller: their own id for staff, none otherwise. */
export const ownerFilter = (user: AuthUser): string | undefined => (isElevated(user) ? undefined : user.id);
