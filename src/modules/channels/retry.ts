// Owns re-sending a failed text: the same message goes back to `queued` with its error cleared and
// its send job due now, in one transaction with its `message.updated` event. Never a second message.
// A retry is a new send: the old provider id and the times it was sent, delivered and read are
// released, so a late report for the old id finds nothing to move (src/modules/channels/statuses.ts).
import type { Store } from '../../db/store.js';
import type { AuthUser } from '../../lib/auth.js';
import { conflict, notFound } from '../../lib/errors.js';
import { findMessage } from '../conversations/messages-repository.js';
import type { MessageView } from '../conversations/schemas.js';
import { visibleConversationRef } from '../conversations/service.js';
import { staffActor } from '../events/emit.js';
import { withEvents } from '../events/outbox.js';
import { type FillFiles, messageUpdated } from './delivery.js';
import { insertSend, type LocalSender, rescheduleSend } from './sends-repository.js';

export async function retryMessage(
  db: Store,
  user: AuthUser,
  conversationId: string,
  messageId: string,
  fill: FillFiles,
  sender: LocalSender | null = null,
) {
  return withEvents(db, async (tx, outbox): Promise<MessageView> => {
    const ref = await visibleConversationRef(tx, user, conversationId);
    const before = await findMessage(tx, conversationId, messageId);
    if (before === undefined) throw notFound('Message', messageId);
    if (before.type !== 'text' || before.direction !== 'outbound' || before.deliveryStatus !== 'failed') {
      throw conflict(`Only a failed outbound text can be retried; this message is ${before.deliveryStatus}`);
    }
    const r = await tx
      .updateTable('messages')
      .set({
        delivery_status: 'queued',
        error_code: null,
        error_message: null,
        external_id: null,
        sent_at: null,
        delivered_at: null,
        read_at: null,
        updated_at: new Date().toISOString(),
      })
      .where('id', '=', messageId)
      .where('delivery_status', '=', 'failed')
      .executeTakeFirst();
    if (Number(r.numUpdatedRows) === 0) throw conflict('The message changed meanwhile; read it again');
    if (!(await rescheduleSend(tx, messageId))) {
      // A message failed at once (no job yet, or its job row was purged): give it a fresh one.
      const exists = await tx
        .selectFrom('channel_sends')
        .where('message_id', '=', messageId)
        .select('status')
        .executeTakeFirst();
      if (exists !== undefined) throw conflict('A send of this message is still in progress');
      await insertSend(tx, messageId, conversationId, ref.channel, new Date().toISOString());
    }
    if (sender !== null) tx.onCommit(() => sender.queued(conversationId));
    // The files are the same before and after: read once, for the event and the answer.
    const [after] = await fill(tx, [(await findMessage(tx, conversationId, messageId))!]);
    messageUpdated(outbox, staffActor(user), { ...before, attachments: after!.attachments }, after!, ref.assignee);
    return after!;
  });
}
