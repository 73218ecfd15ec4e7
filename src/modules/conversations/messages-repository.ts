// Owns message rows: listing a conversation's messages oldest first, inserting one, and the
// row-to-API mapping. Keeping the conversation's counters in step is the caller's (service.ts).
import { paginate } from '../../db/paginate.js';
import { type Param, prepared } from '../../db/prepared.js';
import { toIso } from '../../db/store.js';
import type { Executor, MessageRow } from '../../db/types.js';
import { newId } from '../../lib/ids.js';
import type { MessageView } from './schemas.js';

const COLUMNS = [
  'id',
  'conversation_id',
  'direction',
  'type',
  'content',
  'sender_type',
  'sender_id',
  'delivery_status',
  'created_at',
] as const;

export function toMessage(row: MessageRow): MessageView {
  return {
    id: row.id,
    conversationId: row.conversation_id,
    direction: row.direction,
    type: row.type,
    content: row.content,
    sender: { type: row.sender_type, id: row.sender_id },
    deliveryStatus: row.delivery_status,
    createdAt: toIso(row.created_at),
  };
}

/** A conversation's messages, oldest first. */
export const listMessages = paginate<{ conversationId: string }, MessageRow>({
  name: 'messages',
  from: (db) => db.selectFrom('messages'),
  where: (q, _f, p) => q.where('conversation_id', '=', p('conversationId')),
  columns: (q) => q.select(COLUMNS),
  order: ['created_at', 'id'],
  direction: 'asc',
  keyOf: (row) => [toIso(row.created_at), row.id],
  /**
   * The conversation's own message_count, kept exact in the transaction of every message insert
   * (service.ts) and never decremented (messages are not deleted, but with their conversation):
   * one row read, where counting the messages grows with the conversation.
   */
  count: (x, _f, p) => x.selectFrom('conversations').where('id', '=', p('conversationId')).select('message_count as n'),
  shapeOf: () => '',
  values: (f) => ({ conversationId: f.conversationId }),
});

export type NewMessage = Omit<MessageRow, 'id'>;

const insert = prepared((db, p: Param<MessageRow>) =>
  db.insertInto('messages').values({
    id: p('id'),
    conversation_id: p('conversation_id'),
    direction: p('direction'),
    type: p('type'),
    content: p('content'),
    sender_type: p('sender_type'),
    sender_id: p('sender_id'),
    delivery_status: p('delivery_status'),
    created_at: p('created_at'),
  }),
);

export async function insertMessage(db: Executor, m: NewMessage): Promise<MessageView> {
  const row: MessageRow = { id: newId('msg'), ...m };
  await db.run(insert, row);
  return toMessage(row);
}
