// Owns web_visitors rows (migration 023): the guest an anonymous web visitor is, per caller. The
// visitor's id is looked up and kept as its SHA-256 only.
import { createHash } from 'node:crypto';
import { nowIso } from '../../db/store.js';
import type { Executor } from '../../db/types.js';

/** A widget's visitor: its caller (the API key or staff member posting) and its id as the widget gave it. */
export interface Visitor {
  caller: string;
  id: string;
}

const hashOf = (visitorId: string) => createHash('sha256').update(visitorId, 'utf8').digest('hex');

/** The guest the caller's visitor is, if it wrote before. */
export async function findVisitorGuest(db: Executor, v: Visitor): Promise<string | undefined> {
  const row = await db
    .selectFrom('web_visitors')
    .select('guest_id')
    .where('caller_id', '=', v.caller)
    .where('visitor_hash', '=', hashOf(v.id))
    .executeTakeFirst();
  return row?.guest_id;
}

/** Records the caller's visitor as the guest; a concurrent twin fails the transaction on the key. */
export async function insertVisitor(db: Executor, v: Visitor, guestId: string): Promise<void> {
  await db
    .insertInto('web_visitors')
    .values({ caller_id: v.caller, visitor_hash: hashOf(v.id), guest_id: guestId, created_at: nowIso() })
    .execute();
}
