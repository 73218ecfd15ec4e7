// Owns which stay a conversation's {{stay.*}} placeholders speak of: the guest's current stay as
// guests and conversations show it (docs/stays.md), or none, and then stay placeholders are sent
// empty (docs/productivity.md).
import type { Executor } from '../../db/types.js';
import { currentStay } from '../stays/current.js';

export interface StayFields {
  room: string | null;
  /** YYYY-MM-DD */
  checkIn: string;
  /** YYYY-MM-DD */
  checkOut: string;
}

/** The stay of the conversation's guest that placeholders name, or null when there is none. */
export async function stayFor(db: Executor, conversation: { id: string; guestId: string }): Promise<StayFields | null> {
  return currentStay(db, conversation.guestId);
}
