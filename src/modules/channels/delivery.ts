// Owns a message's delivery state: reading what a send needs (guest address, subject, the e-mail
// thread), and moving the status forward only (queued → sent → delivered → read, or failed),
// each change written with its `message.updated` event in the caller's transaction.

import { sql } from 'kysely';
import { type Param, prepared } from '../../db/prepared.js';
import { fromJson, nowIso, type Store } from '../../db/store.js';
import type { Executor, Tx } from '../../db/types.js';
import {
  findMessage,
  type JobFinish,
  moveStatusPg,
  type StatusUpdate,
  updateMessageStatus,
} from '../conversations/messages-repository.js';
import type { MessageView } from '../conversations/schemas.js';
import { changesOf, SYSTEM } from '../events/emit.js';
import { type NewEvent, type Outbox, withEvents } from '../events/outbox.js';
import type { Actor } from '../events/schemas.js';
import { SETTINGS } from '../settings/registry.js';
import { getSetting } from '../settings/repository.js';
import type { Channel, Outgoing, SendTemplate } from './providers.js';
import { recordSend } from './sends-repository.js';

type Status = MessageView['deliveryStatus'];
const RANK: Record<Status, number> = { received: -1, queued: 0, sent: 1, delivered: 2, read: 3, failed: 4 };

/** Whether `to` is a step forward from `from`; failed is reachable from queued and sent only. */
export function movesForward(from: Status, to: Status): boolean {
  if (to === 'failed') return from === 'queued' || from === 'sent';
  if (from === 'failed' || from === 'received') return false;
  return RANK[to] > RANK[from];
}

export interface SendContext {
  message: { id: string; conversationId: string; type: string; status: Status; content: string };
  outgoing: Outgoing;
  assignee: string | null;
  /** Whether the message has files: a text without any needs no read of them. */
  hasFiles: boolean;
}

/** How many Message-IDs an e-mail's References carries: the thread's first and its latest ones. */
const MAX_REFERENCES = 20;

/**
 * The Message-IDs of the e-mails before this one in its conversation, oldest first, for
 * In-Reply-To (the last) and References. A long thread gives its first message and the latest
 * ones only, as mail clients trim it (RFC 5322 §3.6.4 lets References be shortened), so the
 * read stays a few index entries however long the conversation grows.
 */
type ThreadParams = { conversationId: string; createdAt: string | Date; id: string };

/** The e-mails of a conversation written up to a time (Message-IDs start with '<'), but one. */
const earlierEmails = (db: Executor, p: Param<ThreadParams>) =>
  db
    .selectFrom('messages')
    .where('conversation_id', '=', p('conversationId'))
    .where('external_id', 'like', '<%')
    .where('created_at', '<=', p('createdAt'))
    .where('id', '!=', p('id'))
    .select('external_id');
const latestEmails = prepared((db, p: Param<ThreadParams>) =>
  earlierEmails(db, p)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(MAX_REFERENCES - 1),
);
const firstEmail = prepared((db, p: Param<ThreadParams>) =>
  earlierEmails(db, p).orderBy('created_at').orderBy('id').limit(1),
);

/**
 * The Message-IDs of the e-mails before this one in its conversation, oldest first, for
 * In-Reply-To (the last) and References. A long thread gives its first message and the latest
 * ones only, as mail clients trim it (RFC 5322 §3.6.4 lets References be shortened), so the
 * read stays a few index entries however long the conversation grows.
 */
async function threadOf(db: Executor, row: { id: string; conversation_id: string; created_at: string | Date }) {
  const params = { conversationId: row.conversation_id, createdAt: row.created_at, id: row.id };
  const latest = await db.run(latestEmails, params);
  const ids = latest.map((r) => r.external_id!).reverse();
  if (latest.length < MAX_REFERENCES - 1) return ids;
  const root = (await db.first(firstEmail, params))?.external_id;
  return root && root !== ids[0] ? [root, ...ids] : ids;
}

/** What sending a text needs: the message, its conversation's channel and subject, the guest's addresses. */
const forSend = prepared((db, p: Param<{ messageId: string }>) =>
  db
    .selectFrom('messages as m')
    .innerJoin('conversations as c', 'c.id', 'm.conversation_id')
    .innerJoin('guests as g', 'g.id', 'c.guest_id')
    .leftJoin('channel_sends as s', 's.message_id', 'm.id')
    .where('m.id', '=', p('messageId'))
    .select([
      'm.id',
      'm.conversation_id',
      'm.type',
      'm.delivery_status',
      'm.content',
      'm.created_at',
      'm.sender_type',
      'c.channel',
      'c.subject',
      'c.assignee',
      'g.email',
      'g.phone',
      's.template',
      sql<number>`case when exists (select 1 from attachments a where a.message_id = m.id) then 1 else 0 end`.as(
        'has_files',
      ),
    ]),
);

export async function loadForSend(db: Executor, messageId: string): Promise<SendContext | undefined> {
  const row = await db.first(forSend, { messageId });
  if (row === undefined) return undefined;
  const email = row.channel === 'email';
  const references = email ? await threadOf(db, row) : [];
  // An e-mail without a subject of its own is titled with the hotel's name, the setting as the API
  // shows it (its default, 'My Hotel', until an admin sets one); no other channel has a subject.
  const subject = row.subject ?? (email ? hotelNameOf((await getSetting(db, 'hotel'))?.value) : '');
  return {
    message: {
      id: row.id,
      conversationId: row.conversation_id,
      type: row.type,
      status: row.delivery_status,
      content: row.content,
    },
    outgoing: {
      channel: row.channel as Channel,
      messageId: row.id,
      content: row.content,
      email: row.email,
      phone: row.phone,
      subject,
      references,
      template: templateOf(row.template),
      automatic: row.sender_type === 'system',
    },
    assignee: row.assignee,
    hasFiles: Number(row.has_files) === 1,
  };
}

/** The template a send job carries (sends-repository.ts insertSend), or null for free text. */
function templateOf(json: string | null): SendTemplate | null {
  if (json === null) return null;
  const t = fromJson<Partial<SendTemplate>>(json);
  if (typeof t.name !== 'string' || typeof t.language !== 'string') return null;
  return {
    name: t.name,
    language: t.language,
    parameters: Array.isArray(t.parameters) ? t.parameters.map(String) : [],
  };
}

function hotelNameOf(value: unknown): string {
  const name = (value as { name?: unknown } | null | undefined)?.name;
  return typeof name === 'string' && name !== '' ? name : (SETTINGS.hotel!.default as { name: string }).name;
}

/** A message, its conversation, and the staff member who may read it (for its event). */
export interface MessageRef {
  conversationId: string;
  messageId: string;
  assignee: string | null;
}

export interface StatusChange {
  status: Status;
  /** The provider's id, set when given; null: accepted without one (the text keeps none). */
  externalId?: string | null;
  error?: { code: string; message: string } | null;
  /** When the provider says it happened; now when unknown. */
  at?: string;
}

const STATUSES = Object.keys(RANK) as Status[];

/** What a change writes: its status, and the stamps it implies (each set only where still empty). */
function statusUpdate(change: StatusChange): StatusUpdate {
  const at = change.at ?? nowIso();
  const s = change.status;
  // A status reached implies the earlier ones happened: a `read` first stamps delivered and sent.
  const reached = (x: Status) => s !== 'failed' && RANK[s] >= RANK[x];
  return {
    status: s,
    updatedAt: nowIso(),
    externalId: change.externalId ?? undefined,
    error: change.error,
    sentAt: reached('sent') ? at : null,
    deliveredAt: reached('delivered') ? at : null,
    readAt: reached('read') ? at : null,
  };
}

/**
 * Applies a status change if it moves forward (a late `delivered` after `read` changes nothing),
 * writing `message.updated`. A provider's report (`reported`) never moves a `queued` text: it is
 * about a send that is over (a retry released its id) or not yet recorded. Returns the message
 * after, or undefined when nothing changed.
 */
export async function applyStatus(
  tx: Executor,
  outbox: Outbox,
  actor: Actor,
  ref: MessageRef,
  change: StatusChange,
  reported = false,
): Promise<MessageView | undefined> {
  if (tx.dialect === 'postgres') return (await moveStatus(tx, outbox, actor, ref, change, null, reported)).after;
  const before = await findMessage(tx, ref.conversationId, ref.messageId);
  if (before === undefined || !movesForward(before.deliveryStatus, change.status)) return undefined;
  if (reported && before.deliveryStatus === 'queued') return undefined;
  const after = await updateMessageStatus(tx, ref.messageId, before.deliveryStatus, statusUpdate(change));
  if (after === undefined) return undefined;
  messageUpdated(outbox, actor, before, after, ref.assignee);
  return after;
}

/** PostgreSQL: applyStatus in one statement, with the send job's finish when `job` is given. */
async function moveStatus(
  tx: Executor,
  outbox: Outbox,
  actor: Actor,
  ref: MessageRef,
  change: StatusChange,
  job: JobFinish | null,
  reported = false,
) {
  const allowed = STATUSES.filter((from) => movesForward(from, change.status) && !(reported && from === 'queued'));
  const moved = await moveStatusPg(tx, ref, allowed, statusUpdate(change), job);
  if (moved.before !== undefined && moved.after !== undefined) {
    messageUpdated(outbox, actor, moved.before, moved.after, ref.assignee);
  }
  return moved;
}

/** A send's outcome: its job's next state and the message's status change. */
export interface SendOutcome {
  messageId: string;
  next: { retryAt: string } | 'sent' | 'failed';
  /** Null: the job only (a retry, or a message no longer queued). */
  status: { ref: MessageRef; change: StatusChange } | null;
}

/**
 * Records a send's outcome under this instance's lease: the job's next state and, when the send
 * settled the text, its status change and event. Nothing changes if the lease was lost meanwhile
 * (false). On PostgreSQL a settled text's job and status are one statement.
 */
export async function recordOutcome(tx: Executor, outbox: Outbox, instance: string, o: SendOutcome): Promise<boolean> {
  if (tx.dialect === 'postgres' && o.status !== null && typeof o.next === 'string') {
    return (await moveStatus(tx, outbox, SYSTEM, o.status.ref, o.status.change, { instance, next: o.next })).held;
  }
  if (!(await recordSend(tx, o.messageId, instance, o.next))) return false;
  if (o.status !== null) await applyStatus(tx, outbox, SYSTEM, o.status.ref, o.status.change);
  return true;
}

/**
 * Gives messages their `attachments` (src/modules/attachments/service.ts withAttachments), one read
 * for all of them, in the order given.
 */
export type FillFiles = (db: Executor, messages: MessageView[]) => Promise<MessageView[]>;

/**
 * withEvents for status changes: `work`'s events are held back, then the messages of its
 * `message.updated` events get their files, one read for the whole transaction, and the events
 * pass on in order. A status change leaves a message's files as they are (its `changes` never name
 * them), but its event shows the message whole, as every other read of it does. No `fill`: the
 * events pass on as they are.
 */
export function withStatusEvents<T>(
  store: Store,
  fill: FillFiles | null,
  work: (tx: Tx, outbox: Outbox) => Promise<T>,
): Promise<T> {
  return withEvents(store, async (tx, outbox) => {
    if (fill === null) return work(tx, outbox);
    const held: NewEvent[] = [];
    const out = await work(tx, { add: (e) => held.push(e) });
    const updated = held.filter((e) => e.type === 'message.updated');
    const filled = await fill(
      tx,
      updated.map((e) => e.data as MessageView),
    );
    for (const [i, e] of updated.entries()) e.data = filled[i];
    for (const e of held) outbox.add(e);
    return out;
  });
}

export function messageUpdated(
  outbox: Outbox,
  actor: Actor,
  before: MessageView,
  after: MessageView,
  assignee: string | null,
): void {
  outbox.add({
    type: 'message.updated',
    actor,
    data: after,
    changes: changesOf(before, after),
    conversationId: after.conversationId,
    assignee,
  });
}
