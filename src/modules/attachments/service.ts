// Owns the rules of attachments: taking an upload (streamed to a staging file, sniffed, refused
// or kept once per digest), who may read a file, giving uploads to a message in its transaction,
// and a message's files as the API shows them (with signed links).
import { rm } from 'node:fs/promises';
import { Readable } from 'node:stream';
import type { FastifyRequest } from 'fastify';
import { nowIso } from '../../db/store.js';
import type { Executor, Tx } from '../../db/types.js';
import { isElevated } from '../../lib/access.js';
import type { AuthUser } from '../../lib/auth.js';
import { AppError, type FieldError, forbidden, notFound, validation } from '../../lib/errors.js';
import { newId } from '../../lib/ids.js';
import { findConversationRef } from '../conversations/repository.js';
import { type BlobStore, type Received, receive, TooLarge } from './blob-store.js';
import { cleanFilename, declaredType, defaultFilename, judge } from './media.js';
import {
  type AttachmentRow,
  attachmentsOfMessages,
  claimUpload,
  findAttachment,
  findAttachments,
  insertAttachment,
} from './repository.js';
import type { AttachmentView, MessageAttachmentView } from './schemas.js';
import type { LinkSigner } from './signing.js';

/** What the attachment services need from the app (src/modules/attachments/runtime.ts). */
export interface AttachmentDeps {
  blobs: BlobStore;
  signer: LinkSigner;
  maxBytes: number;
}

/** A file sent as a plain form field (no filename) is taken up to this size; larger ones go as a file part. */
const FIELD_BYTES = 64 * 1024;

const tooLarge = (limit: number) =>
  new AppError('PAYLOAD_TOO_LARGE', `The file is larger than ${limit} bytes (ATTACHMENT_MAX_BYTES)`, undefined, {
    connection: 'close',
  });

export function attachmentView(row: AttachmentRow, signer: LinkSigner): AttachmentView {
  return {
    id: row.id,
    filename: row.filename,
    contentType: row.content_type,
    size: row.size,
    sha256: row.sha256,
    status: row.status,
    url: row.status === 'stored' ? signer.url(row.id) : null,
    error: row.error_code === null ? null : { code: row.error_code, message: row.error_message ?? '' },
    conversationId: row.conversation_id,
    messageId: row.message_id,
    createdAt: row.created_at,
  };
}

export function messageAttachmentView(row: AttachmentRow, signer: LinkSigner): MessageAttachmentView {
  const v = attachmentView(row, signer);
  return {
    id: v.id,
    filename: v.filename,
    contentType: v.contentType,
    size: v.size,
    status: v.status,
    url: v.url,
    error: v.error,
  };
}

/** Reads the one `file` part of a multipart upload into a staging file; its declared type and name. */
/** A file received into staging, not yet judged or kept. */
export interface StagedUpload {
  received: Received;
  declared: string | null;
  filename: string | null;
}

/**
 * Reads the one `file` part of a multipart upload into a staging file, with its declared type and
 * name. Runs before the handler (and any Idempotency-Key's request transaction): a slow upload
 * holds no transaction open while it streams.
 */
export async function readUpload(deps: AttachmentDeps, request: FastifyRequest): Promise<StagedUpload> {
  let got: { received: Received; declared: string | null; filename: string | null } | null = null;
  const refuse = (problem: FieldError) => validation([problem]);
  try {
    const parts = request.parts({
      limits: { files: 1, fields: 2, parts: 3, fileSize: deps.maxBytes + 1, fieldSize: FIELD_BYTES, headerPairs: 20 },
    });
    for await (const part of parts) {
      if (part.fieldname !== 'file') {
        if (part.type === 'file') part.file.resume();
        throw refuse({ field: part.fieldname.slice(0, 100), message: 'is not a field of an upload (send `file`)' });
      }
      if (got !== null) {
        if (part.type === 'file') part.file.resume();
        throw refuse({ field: 'file', message: 'must be sent once: one file per upload' });
      }
      if (part.type === 'file') {
        const received = await receive(deps.blobs, part.file, deps.maxBytes);
        // A file part without a Content-Type reads as text/plain (RFC 7578's default): it says nothing.
        const declared = declaredType(part.mimetype);
        got = { received, declared: declared === 'text/plain' ? null : declared, filename: part.filename ?? null };
      } else {
        if (part.valueTruncated) {
          throw refuse({
            field: 'file',
            message: `as a plain field takes at most ${FIELD_BYTES} bytes; send a file part`,
          });
        }
        const bytes = Buffer.from(String(part.value), 'utf8');
        const received = await receive(deps.blobs, Readable.from([bytes]), deps.maxBytes);
        got = { received, declared: null, filename: null };
      }
    }
  } catch (err) {
    if (got !== null) await rm(got.received.path, { force: true });
    if (err instanceof TooLarge) throw tooLarge(deps.maxBytes);
    const code = (err as { code?: unknown }).code;
    if (code === 'FST_REQ_FILE_TOO_LARGE') throw tooLarge(deps.maxBytes);
    if (code === 'FST_FILES_LIMIT') throw refuse({ field: 'file', message: 'must be sent once: one file per upload' });
    if (code === 'FST_PARTS_LIMIT' || code === 'FST_FIELDS_LIMIT') {
      throw refuse({ field: 'body', message: 'has more parts than an upload takes (one `file`)' });
    }
    if (code === 'FST_INVALID_MULTIPART_CONTENT_TYPE') {
      throw new AppError('UNSUPPORTED_MEDIA_TYPE', 'Send the file as multipart/form-data with one `file` part');
    }
    throw err;
  }
  if (got === null) throw refuse({ field: 'file', message: 'is required: send the file as a `file` part' });
  return got;
}

/** Stores a multipart upload: 201's record, or 413/415/400 with nothing kept. */
export async function upload(
  db: Executor,
  deps: AttachmentDeps,
  user: AuthUser,
  staged: StagedUpload,
): Promise<AttachmentView> {
  const { received, declared, filename } = staged;
  try {
    const verdict = await judge(received.head, received.text, declared);
    if (!verdict.ok) throw new AppError('UNSUPPORTED_MEDIA_TYPE', `The file is refused: ${verdict.message}`);
    await deps.blobs.put(received.sha256, received.path, received.size);
    const id = newId('att');
    const at = nowIso();
    const row: AttachmentRow = {
      id,
      conversation_id: null,
      message_id: null,
      position: 0,
      source: 'upload',
      status: 'stored',
      filename: cleanFilename(filename, defaultFilename(verdict.contentType, id)),
      content_type: verdict.contentType,
      size: received.size,
      sha256: received.sha256,
      error_code: null,
      error_message: null,
      origin: null,
      attempts: 0,
      created_by: user.id,
      created_at: at,
    };
    await insertAttachment(db, {
      id,
      conversationId: null,
      messageId: null,
      position: 0,
      source: 'upload',
      status: 'stored',
      filename: row.filename,
      contentType: row.content_type,
      size: row.size,
      sha256: row.sha256,
      origin: null,
      createdBy: user.id,
      at,
    });
    return attachmentView(row, deps.signer);
  } finally {
    // Gone already when it was put; removed here when it was refused or failed on the way.
    await rm(received.path, { force: true });
  }
}

/**
 * An upload no message took yet is its uploader's alone: to anyone else, admins and API keys
 * included, it does not exist (docs/attachments.md), so its id reveals nothing.
 */
const othersUnused = (row: AttachmentRow, user: AuthUser): boolean =>
  row.message_id === null && row.created_by !== user.id;

/**
 * The attachment if the caller may read it: an unused upload by whoever uploaded it; a message's
 * file by whoever may see its conversation. 404 if missing or someone else's unused upload.
 */
export async function readableAttachment(db: Executor, user: AuthUser, id: string): Promise<AttachmentRow> {
  const row = await findAttachment(db, id);
  if (row === undefined || othersUnused(row, user)) throw notFound('Attachment', id);
  await assertMayUse(db, user, row);
  return row;
}

/** For a row the caller already holds (not someone else's unused upload): its conversation's access. */
async function assertMayUse(db: Executor, user: AuthUser, row: AttachmentRow): Promise<void> {
  if (isElevated(user) || row.conversation_id === null) return;
  const ref = await findConversationRef(db, row.conversation_id);
  if (ref?.assignee !== user.id) throw forbidden('This file belongs to a conversation that is not assigned to you');
}

/**
 * Gives the files `ids` to a new message, in this order, inside its transaction: an unused upload
 * is taken by whoever uploaded it; a file another message already carries (of a conversation the
 * caller may see) is carried again as a new record of the same content. Unknown ids, and someone
 * else's unused uploads (whatever the caller's role: an upload is private until it is sent, and
 * is not revealed to exist) → 400 naming each; a file the caller may not see → 403; one not
 * stored (pending or failed) → 400.
 */
export async function attachToMessage(
  tx: Tx,
  user: AuthUser,
  ids: readonly string[],
  to: { conversationId: string; messageId: string; at: string },
): Promise<void> {
  const rows = new Map((await findAttachments(tx, ids)).map((r) => [r.id, r]));
  const problems: FieldError[] = [];
  ids.forEach((id, i) => {
    const row = rows.get(id);
    if (row === undefined || othersUnused(row, user)) {
      problems.push({ field: `attachments/${i}`, message: 'names no uploaded file' });
    } else if (row.status !== 'stored') {
      problems.push({ field: `attachments/${i}`, message: `is ${row.status}, not a stored file` });
    }
  });
  if (problems.length > 0) throw validation(problems);
  for (const [i, id] of ids.entries()) {
    const row = rows.get(id)!;
    await assertMayUse(tx, user, row);
    const at = { conversationId: to.conversationId, messageId: to.messageId, position: i, at: to.at };
    if (row.message_id === null && (await claimUpload(tx, id, user.id, at))) continue;
    await insertAttachment(tx, {
      id: newId('att'),
      conversationId: to.conversationId,
      messageId: to.messageId,
      position: i,
      source: row.source,
      status: 'stored',
      filename: row.filename,
      contentType: row.content_type,
      size: row.size,
      sha256: row.sha256,
      origin: null,
      createdBy: user.id,
      at: to.at,
    });
  }
}

/** withAttachments with this deployment's signer: what a status change's event needs (channels/delivery.ts FillFiles). */
export const fillFiles =
  (signer: LinkSigner) =>
  <M extends { id: string; attachments: MessageAttachmentView[] }>(db: Executor, messages: M[]): Promise<M[]> =>
    withAttachments(db, signer, messages);

/** Messages with their files: one query for all of them. */
export async function withAttachments<M extends { id: string; attachments: MessageAttachmentView[] }>(
  db: Executor,
  signer: LinkSigner,
  messages: M[],
): Promise<M[]> {
  if (messages.length === 0) return messages;
  const rows = await attachmentsOfMessages(
    db,
    messages.map((m) => m.id),
  );
  if (rows.length === 0) return messages;
  const byMessage = new Map<string, MessageAttachmentView[]>();
  for (const r of rows) {
    const list = byMessage.get(r.message_id!) ?? [];
    list.push(messageAttachmentView(r, signer));
    byMessage.set(r.message_id!, list);
  }
  return messages.map((m) => (byMessage.has(m.id) ? { ...m, attachments: byMessage.get(m.id)! } : m));
}
