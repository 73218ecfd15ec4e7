// Owns message rows: listing a conversation's messages oldest first, inserting one, and the
// row-to-API mapping. Keeping the conversation's counters in step is the caller's (service.ts).
import { type Param, prepared, preparedPage } from '../../db/prepared.js';
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

type PageInputs = { conversationId: string; limit: number; offset: number };

const pageOf = preparedPage((db, p: Param<PageInputs>) =>
  db
    .selectFrom('messages')
    .where('conversation_id', '=', p('conversationId'))
    .select(COLUMNS)
    .orderBy('created_at', 'asc')
    .orderBy('id', 'asc'),
);

const countOf = prepared((db, p: Param<{ conversationId: string }>) =>
  db
    .selectFrom('messages')
    .where('conversation_id', '=', p('conversationId'))
    .select((eb) => eb.fn.countAll<number>().as('n')),
);

export async function listMessages(db: Executor, conversationId: string, page: number, limit: number) {
  const [rows, n] = await Promise.all([
    db.run(pageOf, { conversationId, limit, offset: (page - 1) * limit }),
    db.first(countOf, { conversationId }),
  ]);
  return { items: rows.map(toMessage), total: Number(n?.n ?? 0) };
}

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
