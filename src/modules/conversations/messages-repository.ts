// Owns message rows: listing a conversation's messages oldest first, inserting one, and the
// row-to-API mapping. Keeping the conversation's counters in step is the caller's (service.ts).
import { sql } from 'kysely';
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
  'external_id',
  'error_code',
  'error_message',
  'sent_at',
  'delivered_at',
  'read_at',
] as const;

type ListedRow = Pick<MessageRow, (typeof COLUMNS)[number]>;
const isoOrNull = (v: string | Date | null) => (v === null ? null : toIso(v));

export function toMessage(row: ListedRow): MessageView {
  return {
    id: row.id,
    conversationId: row.conversation_id,
    direction: row.direction,
    type: row.type,
    content: row.content,
    sender: { type: row.sender_type, id: row.sender_id },
    deliveryStatus: row.delivery_status,
    externalId: row.external_id,
    error: row.error_code === null ? null : { code: row.error_code, message: row.error_message ?? '' },
    sentAt: isoOrNull(row.sent_at),
    deliveredAt: isoOrNull(row.delivered_at),
    readAt: isoOrNull(row.read_at),
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

type BaseRow = Omit<ListedRow, (typeof DELIVERY)[number]>;
const DELIVERY = ['external_id', 'error_code', 'error_message', 'sent_at', 'delivered_at', 'read_at'] as const;
/** A new message: delivery state is optional (a web text is sent at once, an inbound has its provider id). */
export type NewMessage = Omit<BaseRow, 'id'> &
  Partial<Pick<MessageRow, 'external_id' | 'sent_at' | 'provider_key' | 'error_code' | 'error_message'>>;
type InsertRow = BaseRow &
  Pick<MessageRow, 'external_id' | 'sent_at' | 'provider_key' | 'error_code' | 'error_message'>;

const insert = prepared((db, p: Param<InsertRow>) =>
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
    external_id: p('external_id'),
    sent_at: p('sent_at'),
    provider_key: p('provider_key'),
    error_code: p('error_code'),
    error_message: p('error_message'),
  }),
);

export async function insertMessage(db: Executor, m: NewMessage): Promise<MessageView> {
  const row: InsertRow = {
    id: newId('msg'),
    external_id: null,
    sent_at: null,
    provider_key: null,
    error_code: null,
    error_message: null,
    ...m,
  };
  await db.run(insert, row);
  return toMessage({ ...row, delivered_at: null, read_at: null });
}

const one = prepared((db, p: Param<{ conversationId: string; id: string }>) =>
  db
    .selectFrom('messages')
    .where('conversation_id', '=', p('conversationId'))
    .where('id', '=', p('id'))
    .select(COLUMNS),
);

/** A delivery status change: what is set, and the stamps that are set only where still empty. */
export interface StatusUpdate {
  status: MessageRow['delivery_status'];
  updatedAt: string;
  /** Set when given; kept otherwise. */
  externalId?: string;
  /** Set (an error) or cleared (null) when given; kept when undefined. */
  error?: { code: string; message: string } | null;
  /** Written into sent_at / delivered_at / read_at where that is still null; null: left alone. */
  sentAt: string | null;
  deliveredAt: string | null;
  readAt: string | null;
}

type StatusParams = {
  id: string;
  from: MessageRow['delivery_status'];
  status: MessageRow['delivery_status'];
  updatedAt: string;
  externalId: string | null;
  setError: number;
  errorCode: string | null;
  errorMessage: string | null;
  sentAt: string | null;
  deliveredAt: string | null;
  readAt: string | null;
};

const updateStatus = prepared((db, p: Param<StatusParams>) =>
  db
    .updateTable('messages')
    .set({
      delivery_status: p('status'),
      updated_at: p('updatedAt'),
      external_id: sql`coalesce(${p('externalId')}, external_id)`,
      error_code: sql`case when ${p('setError')} = 1 then ${p('errorCode')} else error_code end`,
      error_message: sql`case when ${p('setError')} = 1 then ${p('errorMessage')} else error_message end`,
      sent_at: sql`coalesce(sent_at, ${p('sentAt')})`,
      delivered_at: sql`coalesce(delivered_at, ${p('deliveredAt')})`,
      read_at: sql`coalesce(read_at, ${p('readAt')})`,
    })
    .where('id', '=', p('id'))
    .where('delivery_status', '=', p('from'))
    .returning(COLUMNS),
);

/**
 * Applies `change` to the message if its delivery status is still `from` (a concurrent change of
 * it wins otherwise) and returns the message after, in the same statement; undefined if unchanged.
 */
export async function updateMessageStatus(
  db: Executor,
  id: string,
  from: MessageView['deliveryStatus'],
  change: StatusUpdate,
): Promise<MessageView | undefined> {
  const row = await db.first(updateStatus, {
    id,
    from,
    status: change.status,
    updatedAt: change.updatedAt,
    externalId: change.externalId ?? null,
    setError: change.error === undefined ? 0 : 1,
    errorCode: change.error?.code ?? null,
    errorMessage: change.error?.message ?? null,
    sentAt: change.sentAt,
    deliveredAt: change.deliveredAt,
    readAt: change.readAt,
  });
  return row && toMessage(row);
}

export async function findMessage(db: Executor, conversationId: string, id: string): Promise<MessageView | undefined> {
  const row = await db.first(one, { conversationId, id });
  return row && toMessage(row);
}
