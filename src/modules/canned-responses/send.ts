// Owns turning a canned response into the content of a message for one conversation: its
// placeholders filled in with the guest, the stay, the hotel and the sender as they are now. The
// message then goes the ordinary way (src/modules/conversations/service.ts).
import type { Executor } from '../../db/types.js';
import type { AuthUser } from '../../lib/auth.js';
import { fieldError } from '../../lib/errors.js';
import { getSetting } from '../settings/repository.js';
import { fillPlaceholders, firstNameOf } from './placeholders.js';
import { findCanned } from './repository.js';
import { MAX_CONTENT } from './schemas.js';
import { stayFor } from './stay.js';

const FIELD = 'cannedResponseId';

/** The canned response's text for this conversation; VALIDATION_ERROR when it names none or renders empty. */
export async function renderCanned(
  db: Executor,
  cannedResponseId: string,
  conversation: { id: string; guestId: string },
  sender: AuthUser,
): Promise<string> {
  const canned = await findCanned(db, cannedResponseId);
  if (canned === undefined) throw fieldError(FIELD, 'must be the id of an existing canned response');
  // One after another: a transaction's statements share its one connection.
  const guest = await db.selectFrom('guests').select('name').where('id', '=', conversation.guestId).executeTakeFirst();
  const hotel = await getSetting(db, 'hotel');
  const stay = await stayFor(db, conversation);
  const guestName = guest?.name ?? '';
  const hotelName = (hotel?.value as { name?: unknown } | undefined)?.name;
  const content = fillPlaceholders(canned.content, {
    'guest.name': guestName,
    'guest.firstName': firstNameOf(guestName),
    'stay.room': stay?.room ?? '',
    'stay.checkIn': stay?.checkIn ?? '',
    'stay.checkOut': stay?.checkOut ?? '',
    'hotel.name': typeof hotelName === 'string' ? hotelName : '',
    // An API key is not a person: it signs with nothing.
    'staff.name': sender.kind === 'staff' ? sender.name : '',
  });
  if (content.trim() === '') throw fieldError(FIELD, 'renders to an empty message for this conversation');
  if ([...content].length > MAX_CONTENT) {
    throw fieldError(FIELD, `renders to more than ${MAX_CONTENT} characters for this conversation`);
  }
  return content;
}
