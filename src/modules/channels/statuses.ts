// Owns what providers report about the texts the API sent (Twilio's status callback, WhatsApp's
// statuses[]): a report is applied to the outbound text that carries the provider's id, forward
// only and never to a `queued` text (a retry releases the old id: src/modules/channels/retry.ts).
import type { Store } from '../../db/store.js';
import { SYSTEM } from '../events/emit.js';
import { withEvents } from '../events/outbox.js';
import { applyStatus, type StatusChange } from './delivery.js';

/**
 * A provider's report on the outbound text carrying `externalId`: applied when it moves that text
 * forward (a repeat or a late `delivered` after `read` changes nothing). False when no text
 * carries the id.
 */
export async function receiveStatus(store: Store, externalId: string, change: StatusChange): Promise<boolean> {
  return withEvents(store, async (tx, outbox) => {
    const row = await tx
      .selectFrom('messages as m')
      .innerJoin('conversations as c', 'c.id', 'm.conversation_id')
      .where('m.external_id', '=', externalId)
      .where('m.direction', '=', 'outbound')
      .select(['m.id', 'm.conversation_id', 'c.assignee'])
      .executeTakeFirst();
    if (row === undefined) return false;
    const ref = { conversationId: row.conversation_id, messageId: row.id, assignee: row.assignee };
    await applyStatus(tx, outbox, SYSTEM, ref, change, true);
    return true;
  });
}
