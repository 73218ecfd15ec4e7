// Owns attachment rows: inserting an upload or an inbound file, reading them by id or by message,
// moving an inbound file from pending to stored or failed, and the sweep's queries.
import { type Param, preparedByShape } from '../../db/prepared.js';
import { fromJson, toIso, toJson } from '../../db/store.js';
import type { AttachmentTable, Executor } from '../../db/types.js';

export interface AttachmentRow {
  id: string;
  conversation_id: string | null;
  message_id: string | null;
  position: number;
  source: AttachmentTable['source'];
  status: AttachmentTable['status'];
  filename: string;
  content_type: string | null;
  size: number | null;
  sha256: string | null;
  error_code: string | null;
  error_message: string | null;
  origin: unknown;
  attempts: number;
  created_by: string | null;
  created_at: string;
}

/** Where an inbound file is fetched from; never holds a credential (those come from config). */
export type Origin =
  | { provider: 'twilio'; url: string; contentType: string | null }
  | { provider: 'whatsapp'; mediaId: string; contentType: string | null }
  /** An e-mail part written to this instance's staging folder before its message's transaction. */
  | { provider: 'staged'; path: string; contentType: string | null };

const COLUMNS = [
  'id',
  'conversation_id',
  'message_id',
  'position',
  'source',
  'status',
  'filename',
  'content_type',
  'size',
  'sha256',
  'error_code',
  'error_message',
  'origin',
  'attempts',
  'created_by',
  'created_at',
] as const;

function shape(row: Record<string, unknown>): AttachmentRow {
  const r = row as unknown as AttachmentRow & { created_at: string | Date };
  return {
    ...r,
    size: r.size === null ? null : Number(r.size),
    position: Number(r.position),
    attempts: Number(r.attempts),
    origin: r.origin === null ? null : fromJson(r.origin),
    created_at: toIso(r.created_at),
  };
}

export interface NewAttachment {
  id: string;
  conversationId: string | null;
  messageId: string | null;
  position: number;
  source: AttachmentTable['source'];
  status: AttachmentTable['status'];
  filename: string;
  contentType: string | null;
  size: number | null;
  sha256: string | null;
  origin: Origin | null;
  createdBy: string | null;
  at: string;
}

export async function insertAttachment(db: Executor, a: NewAttachment): Promise<void> {
  await db
    .insertInto('attachments')
    .values({
      id: a.id,
      conversation_id: a.conversationId,
      message_id: a.messageId,
      position: a.position,
      source: a.source,
      status: a.status,
      filename: a.filename,
      content_type: a.contentType,
      size: a.size,
      sha256: a.sha256,
      error_code: null,
      error_message: null,
      origin: a.origin === null ? null : toJson(a.origin),
      created_by: a.createdBy,
      created_at: a.at,
      updated_at: a.at,
    })
    .execute();
}

export async function findAttachment(db: Executor, id: string): Promise<AttachmentRow | undefined> {
  const row = await db.selectFrom('attachments').select(COLUMNS).where('id', '=', id).executeTakeFirst();
  return row && shape(row);
}

export async function findAttachments(db: Executor, ids: readonly string[]): Promise<AttachmentRow[]> {
  if (ids.length === 0) return [];
  const rows = await db.selectFrom('attachments').select(COLUMNS).where('id', 'in', ids).execute();
  return rows.map(shape);
}

/** The files of these messages, in each message's order. */
// Prepared per number of messages (a page holds at most 100): every message read asks for its files.
const ofMessages = preparedByShape(
  (n: number) => String(n),
  (db, p: Param<Record<string, string>>, n) =>
    db
      .selectFrom('attachments')
      .select(COLUMNS)
      .where(
        'message_id',
        'in',
        Array.from({ length: n }, (_, i) => p(`m${i}`)),
      )
      .orderBy('message_id')
      .orderBy('position'),
  100,
);

export async function attachmentsOfMessages(db: Executor, messageIds: readonly string[]): Promise<AttachmentRow[]> {
  if (messageIds.length === 0) return [];
  const params: Record<string, string> = {};
  messageIds.forEach((id, i) => {
    params[`m${i}`] = id;
  });
  const rows = await db.run(ofMessages(messageIds.length), params);
  return rows.map(shape);
}

/**
 * Gives an unused upload to a message, only when `by` (a staff member's or an API key's id)
 * uploaded it; false when it is someone else's, or another message took it first.
 */
export async function claimUpload(
  db: Executor,
  id: string,
  by: string,
  to: { conversationId: string; messageId: string; position: number; at: string },
): Promise<boolean> {
  const r = await db
    .updateTable('attachments')
    .set({
      conversation_id: to.conversationId,
      message_id: to.messageId,
      position: to.position,
      updated_at: to.at,
    })
    .where('id', '=', id)
    .where('message_id', 'is', null)
    .where('created_by', '=', by)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

/** Settles a pending file: stored with its content, or failed with the reason. False if it was not pending. */
export async function settleAttachment(
  db: Executor,
  id: string,
  outcome:
    | { status: 'stored'; contentType: string; size: number; sha256: string; filename: string }
    | { status: 'failed'; code: string; message: string },
  at: string,
): Promise<boolean> {
  const q = db.updateTable('attachments').where('id', '=', id).where('status', '=', 'pending');
  const r =
    outcome.status === 'stored'
      ? await q
          .set({
            status: 'stored',
            content_type: outcome.contentType,
            size: outcome.size,
            sha256: outcome.sha256,
            filename: outcome.filename,
            updated_at: at,
          })
          .executeTakeFirst()
      : await q
          .set({
            status: 'failed',
            error_code: outcome.code,
            error_message: outcome.message.slice(0, 2000),
            updated_at: at,
          })
          .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

export async function countAttempt(db: Executor, id: string): Promise<number> {
  await db
    .updateTable('attachments')
    .set((eb) => ({ attempts: eb('attempts', '+', 1) }))
    .where('id', '=', id)
    .execute();
  const row = await db.selectFrom('attachments').select('attempts').where('id', '=', id).executeTakeFirst();
  return Number(row?.attempts ?? 0);
}

/** Uploads no message took that are older than `before`, oldest first. */
export async function unusedUploads(db: Executor, before: string, limit: number) {
  return db
    .selectFrom('attachments')
    .select(['id', 'sha256'])
    .where('message_id', 'is', null)
    .where('created_at', '<', before)
    .orderBy('created_at')
    .limit(limit)
    .execute();
}

export async function deleteAttachment(db: Executor, id: string): Promise<void> {
  await db.deleteFrom('attachments').where('id', '=', id).where('message_id', 'is', null).execute();
}

/** Whether any row still names this content. */
export async function contentInUse(db: Executor, sha256: string): Promise<boolean> {
  const row = await db.selectFrom('attachments').select('id').where('sha256', '=', sha256).limit(1).executeTakeFirst();
  return row !== undefined;
}
