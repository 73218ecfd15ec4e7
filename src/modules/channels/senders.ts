// Owns finding the guest who wrote an inbound message: the guest the caller named, the guest a
// web widget's visitor already is (per caller), the guest whose phone or e-mail the sender has,
// or a new guest. A visitor met for the first time is recorded as the guest it became.
import type { Executor } from '../../db/types.js';
import { validation } from '../../lib/errors.js';
import { recordEvents } from '../events/emit.js';
import type { Outbox } from '../events/outbox.js';
import { findGuest, insertGuest } from '../guests/repository.js';
import { findVisitorGuest, insertVisitor, type Visitor } from './visitors-repository.js';

const E164 = /^\+[1-9]\d{6,14}$/;
const EMAIL = /^[^\s@<>()[\]\\,;:"]+@[^\s@<>()[\]\\,;:"]+\.[^\s@<>()[\]\\,;:"]+$/;

/** The name of a guest made for a visitor who gave none (nor an address to name them by). */
export const VISITOR_NAME = 'Web visitor';

export interface Sender {
  /** A known guest (the web widget's backend may name one). */
  guestId?: string;
  phone?: string | null;
  email?: string | null;
  /** The name a new guest gets (a WhatsApp profile name, an e-mail display name). */
  name?: string | null;
  /** A web widget's visitor, known again by its id for the same caller only. */
  visitor?: Visitor;
}

/** The guest who wrote (see the file's comment), and whether it was made now. */
export async function guestFor(tx: Executor, outbox: Outbox, s: Sender): Promise<{ id: string; created: boolean }> {
  if (s.guestId !== undefined) {
    const g = await findGuest(tx, s.guestId);
    if (g === undefined) throw validation([{ field: 'guestId', message: 'must be the id of an existing guest' }]);
    return { id: g.id, created: false };
  }
  if (s.visitor !== undefined) {
    const known = await findVisitorGuest(tx, s.visitor);
    if (known !== undefined) return { id: known, created: false };
  }
  const guest = await matchOrCreate(tx, outbox, s);
  // A first message of two at once: the later insert fails on the key, and its retry finds this one.
  if (s.visitor !== undefined) await insertVisitor(tx, s.visitor, guest.id);
  return guest;
}

/** The guest with the sender's phone or e-mail (any case), else a new one. */
async function matchOrCreate(tx: Executor, outbox: Outbox, s: Sender): Promise<{ id: string; created: boolean }> {
  const phone = s.phone && E164.test(s.phone) ? s.phone : null;
  const email = s.email && s.email.length <= 254 && EMAIL.test(s.email) ? s.email : null;
  if (phone === null && email === null && s.visitor === undefined) {
    throw validation([{ field: 'sender', message: 'has neither an E.164 phone number nor a valid e-mail address' }]);
  }
  if (phone !== null || email !== null) {
    const found = await tx
      .selectFrom('guests')
      .select(['id', 'phone'])
      .where((eb) =>
        eb.or([
          ...(phone !== null ? [eb('phone', '=', phone)] : []),
          ...(email !== null ? [eb('email_lower', '=', email.toLowerCase())] : []),
        ]),
      )
      .execute();
    // Both may match different guests: the one the channel reaches by (the phone, if given) wins.
    const match = found.find((g) => phone !== null && g.phone === phone) ?? found[0];
    if (match !== undefined) return { id: match.id, created: false };
  }
  const name = (s.name ?? '').replaceAll('\u0000', '').trim().slice(0, 200) || phone || email || VISITOR_NAME;
  const guest = await insertGuest(tx, { name, email, phone });
  recordEvents(outbox, 'guest', { type: 'guest', id: guest.id }, null, guest);
  return { id: guest.id, created: true };
}
