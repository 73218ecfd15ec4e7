// Owns which stay a conversation's {{stay.*}} placeholders speak of. Stays are not part of this
// module: until they are connected here every conversation has none, and stay placeholders are
// sent empty (docs/productivity.md).
import type { Executor } from '../../db/types.js';

export interface StayFields {
  room: string | null;
  /** YYYY-MM-DD */
  checkIn: string;
  /** YYYY-MM-DD */
  checkOut: string;
}

/** The stay of the conversation's guest that placeholders name, or null when there is none. */
export async function stayFor(
  _db: Executor,
  _conversation: { id: string; guestId: string },
): Promise<StayFields | null> {
  return null;
}
