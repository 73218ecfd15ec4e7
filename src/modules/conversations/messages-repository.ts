// Owns message rows: listing a conversation's messages oldest first, inserting one, and the
// row-to-API mapping. Keeping the conversation's counters in step is the caller's (service.ts).
import { CompiledQuery, sql } from 'kysely';
import { paginate } from '../../db/paginate.js';
import { type Param, prepared } from '../../db/prepared.js';
import { toIso } from '../../db/store.js';
import type { Executor, MessageRow } from '../../db/types.js';
import { newId } from '../../lib/ids.js';
import { messageStored, type Opened } from '../reports/recorder.js';
import type { MessageView } from './schemas.js';

/** A message's columns as toMessage reads them: every read of a message (a list, search hits) selects these. */
export const MESSAGE_COLUMNS = [
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

type ListedRow = Pick<MessageRow, (typeof MESSAGE_COLUMNS)[number]>;
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
    // Filled in by src/modules/attachments/service.ts withAttachments where a message is answered.
    attachments: [],
    createdAt: toIso(row.created_at),
  };
}

/** A conversation's messages, oldest first. */
export const listMessages = paginate<{ conversationId: string }, MessageRow>({
  name: 'messages',
  from: (db) => db.selectFrom('messages'),
  where: (q, _f, p) => q.where('conversation_id', '=', p('conversationId')),
  columns: (q) => q.select(MESSAGE_COLUMNS),
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

/** `opened`: its conversation, opened in this transaction with nothing written to it since (reports/recorder.ts). */
export async function insertMessage(db: Executor, m: NewMessage, opened?: Opened): Promise<MessageView> {
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
  const message = toMessage({ ...row, delivered_at: null, read_at: null });
  // Reports count it in the same transaction (docs/reports.md).
  await messageStored(db, { ...message, senderType: row.sender_type, senderId: row.sender_id }, opened);
  return message;
}

const one = prepared((db, p: Param<{ conversationId: string; id: string }>) =>
  db
    .selectFrom('messages')
    .where('conversation_id', '=', p('conversationId'))
    .where('id', '=', p('id'))
    .select(MESSAGE_COLUMNS),
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
    .returning(MESSAGE_COLUMNS),
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

/** A send job finished with a status change: sent (the job deleted) or failed (kept, done). */
export interface JobFinish {
  instance: string;
  next: 'sent' | 'failed';
}

/**
 * PostgreSQL: the statement of `moveStatusPg` for a job finish of this kind (or none). The job's
 * finish, the message's row before and the update are one statement, one round trip, where they
 * were three (src/modules/channels/dispatcher.ts records a send's outcome with it).
 */
function moveStatusSql(job: JobFinish['next'] | null): string {
  const cols = MESSAGE_COLUMNS.map((c) => `m.${c}`).join(', ');
  const after = MESSAGE_COLUMNS.map((c) => `m.${c} as a_${c}`).join(', ');
  const finish =
    job === 'sent'
      ? 'job as (delete from channel_sends where message_id = $1 and locked_by = $13 returning message_id),'
      : job === 'failed'
        ? `job as (update channel_sends set status = 'done', next_attempt_at = null, finished_at = $5::timestamptz,
    locked_until = null, locked_by = null where message_id = $1 and locked_by = $13 returning message_id),`
        : '';
  return `with ${finish} b as materialized (
  select ${cols} from messages m where m.id = $1 and m.conversation_id = $2${job === null ? '' : ' and exists (select 1 from job)'}
), a as (
  update messages m set delivery_status = $4, updated_at = $5::timestamptz, external_id = coalesce($6, m.external_id),
    error_code = case when $7::int = 1 then $8 else m.error_code end,
    error_message = case when $7::int = 1 then $9 else m.error_message end,
    sent_at = coalesce(m.sent_at, $10::timestamptz), delivered_at = coalesce(m.delivered_at, $11::timestamptz),
    read_at = coalesce(m.read_at, $12::timestamptz)
  from b where m.id = b.id and m.delivery_status = b.delivery_status and b.delivery_status = any($3::text[])
  returning ${after}
)
select ${job === null ? 'true' : 'exists (select 1 from job)'} as job_held, b.*, a.*
from (select 1) as one left join b on true left join a on true`;
}

const MOVE_STATUS_SQL = {
  none: moveStatusSql(null),
  sent: moveStatusSql('sent'),
  failed: moveStatusSql('failed'),
};

/**
 * PostgreSQL: `updateMessageStatus` with its read of the message before (and, with `job`, the
 * finish of the send job under this instance's lease) in one statement. `allowed`: the statuses
 * the change moves forward from. Returns whether the job was still held (true without one) and
 * the message before and after the change (after undefined when it changed nothing).
 */
export async function moveStatusPg(
  db: Executor,
  ref: { messageId: string; conversationId: string },
  allowed: readonly MessageView['deliveryStatus'][],
  change: StatusUpdate,
  job: JobFinish | null,
): Promise<{ held: boolean; before?: MessageView; after?: MessageView }> {
  const text = MOVE_STATUS_SQL[job?.next ?? 'none'];
  const parameters = [
    ref.messageId,
    ref.conversationId,
    allowed,
    change.status,
    change.updatedAt,
    change.externalId ?? null,
    change.error === undefined ? 0 : 1,
    change.error?.code ?? null,
    change.error?.message ?? null,
    change.sentAt,
    change.deliveredAt,
    change.readAt,
    ...(job === null ? [] : [job.instance]),
  ];
  const { rows } = await db.executeQuery<Record<string, unknown>>(CompiledQuery.raw(text, parameters));
  const row = rows[0]!;
  const held = row.job_held === true;
  if (row.id === null || row.id === undefined) return { held };
  const before = toMessage(row as unknown as ListedRow);
  if (row.a_id === null || row.a_id === undefined) return { held, before };
  const a: Record<string, unknown> = {};
  for (const c of MESSAGE_COLUMNS) a[c] = row[`a_${c}`];
  return { held, before, after: toMessage(a as unknown as ListedRow) };
}

export async function findMessage(db: Executor, conversationId: string, id: string): Promise<MessageView | undefined> {
  const row = await db.first(one, { conversationId, id });
  return row && toMessage(row);
}
