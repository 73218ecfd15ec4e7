// Owns what happens when a guest writes, on any channel: the sender's guest found or made
// (senders.ts), the message routed to its conversation (the e-mail thread it answers when the sender is
// that thread's guest, else the guest's latest conversation on the channel, reopened if closed,
// else a new one), stored once however often the provider repeats it, and the auto reply outside
// business hours (never to automated mail). Also applies the delivery statuses providers report
// for outbound texts. Each is one transaction with its events.
import { isUniqueViolation, nowIso, type Store } from '../../db/store.js';
import type { Executor, Tx } from '../../db/types.js';
import { newId } from '../../lib/ids.js';
import type { InboundFile, InboundFiles } from '../attachments/inbound.js';
import { insertMessage } from '../conversations/messages-repository.js';
import {
  advanceConversation,
  findConversation,
  insertConversation,
  latestConversationOf,
  touchConversation,
} from '../conversations/repository.js';
import type { MessageView } from '../conversations/schemas.js';
import { storeOutbound } from '../conversations/service.js';
import { WAKE_KIND } from '../conversations/snooze.js';
import { conversationEvents, conversationStatusChanged, messageCreated, SYSTEM } from '../events/emit.js';
import { type Outbox, withEvents } from '../events/outbox.js';
import type { Actor } from '../events/schemas.js';
import { cancelJob } from '../jobs/repository.js';
import { getSetting } from '../settings/repository.js';
import { type BusinessHours, closedSince, isOpen } from './hours.js';
import type { Channel } from './providers.js';
import { guestFor, type Sender } from './senders.js';
import type { LocalSender } from './sends-repository.js';

/** Longest stored content of a message; a longer inbound text (a long e-mail) is cut there. */
export const MAX_CONTENT = 4096;

export interface Inbound {
  channel: Channel;
  sender: Sender;
  content: string;
  /** The provider's id of the message (its `externalId`): the same id is stored once. */
  providerId: string | null;
  /**
   * The key that stores the message once, when not `<channel>:<providerId>`: a key the API derives
   * (a web widget's id with its caller, an e-mail's digest) is written `<channel>#…`, so it never
   * meets a provider's id. Neither: no de-duplication.
   */
  dedupKey?: string;
  /** E-mail: the Message-IDs it answers (In-Reply-To, then References, newest first). */
  thread?: string[];
  /** E-mail: the subject a new conversation gets. */
  subject?: string | null;
  /** Sent by a machine (an auto reply, a list, a bounce): never auto-replied to (RFC 3834). */
  automated?: boolean;
  /** Files that came with it: recorded pending, fetched and stored after commit (docs/attachments.md). */
  files?: InboundFile[];
}

export type InboundResult =
  | {
      stored: true;
      message: MessageView;
      guestId: string;
      guestCreated: boolean;
      conversationCreated: boolean;
      /** The auto reply this message caused, if any. */
      autoReply: MessageView | null;
    }
  /** The provider (or caller) repeated a message already stored: nothing changed. */
  | { stored: false; messageId: string };

/** Text cut to what a message holds, never empty. */
export function contentOf(text: string | null | undefined, fallback: string): string {
  const t = (text ?? '').replaceAll('\u0000', '').trim();
  const s = t === '' ? fallback : t;
  return s.length <= MAX_CONTENT ? s : `${s.slice(0, MAX_CONTENT - 1)}…`;
}

/** Stores a guest's message (see the file's comment). Retried once when a concurrent twin won a unique key. */
export async function receiveInbound(
  store: Store,
  m: Inbound,
  sender: LocalSender | null = null,
  files: InboundFiles | null = null,
): Promise<InboundResult> {
  const prepared = files !== null && m.files !== undefined && m.files.length > 0 ? await files.prepare(m.files) : [];
  const recorder: Recorder | null =
    prepared.length === 0
      ? null
      : async (tx, message) => {
          const r = await files!.record(tx, message, prepared);
          await files!.schedule(tx, r.pending);
          return r.message;
        };
  let result: InboundResult;
  try {
    try {
      result = await withEvents(store, (tx, outbox) => receive(tx, outbox, m, sender, recorder));
    } catch (err) {
      // Two deliveries of one provider message (or two first messages of one new sender) raced: the
      // loser's transaction rolled back whole; run again, and it finds what the winner stored.
      if (!isUniqueViolation(err)) throw err;
      result = await withEvents(store, (tx, outbox) => receive(tx, outbox, m, sender, recorder));
    }
  } catch (err) {
    await files?.discard(prepared);
    throw err;
  }
  if (!result.stored) await files?.discard(prepared);
  return result;
}

/** Records a new inbound message's files in its transaction; the message with them. */
type Recorder = (tx: Tx, message: MessageView) => Promise<MessageView>;

async function receive(
  tx: Tx,
  outbox: Outbox,
  m: Inbound,
  sender: LocalSender | null,
  recordFiles: Recorder | null,
): Promise<InboundResult> {
  const providerKey = m.dedupKey ?? (m.providerId === null ? null : `${m.channel}:${m.providerId}`);
  if (providerKey !== null) {
    const seen = await tx
      .selectFrom('messages')
      .where('provider_key', '=', providerKey)
      .select('id')
      .executeTakeFirst();
    if (seen !== undefined) return { stored: false, messageId: seen.id };
  }
  const guest = await guestFor(tx, outbox, m.sender);
  const actor: Actor = { type: 'guest', id: guest.id };
  const target = await conversationFor(tx, guest.id, m);
  const conversationId = target?.id ?? newId('cnv');
  // An existing conversation gets its time and is touched (reopened if closed) in one statement,
  // under its lock, after its latest message: a staff text (or this message's auto reply)
  // committed alongside keeps the order of its time, which is the order it is sent in.
  const at = target === undefined ? nowIso() : (await advanceConversation(tx, target.id, true))!;
  if (target === undefined) {
    await insertConversation(tx, {
      id: conversationId,
      guestId: guest.id,
      channel: m.channel,
      subject: m.subject ? m.subject.slice(0, 200) : null,
      assignee: null,
      messageCount: 0,
      at,
    });
  }
  let message = await insertMessage(tx, {
    conversation_id: conversationId,
    direction: 'inbound',
    type: 'text',
    content: m.content,
    sender_type: 'guest',
    sender_id: guest.id,
    delivery_status: 'received',
    created_at: at,
    provider_key: providerKey,
    external_id: m.providerId,
  });
  if (recordFiles !== null) message = await recordFiles(tx, message);
  if (target === undefined) await touchConversation(tx, conversationId, at, true);
  const after = (await findConversation(tx, conversationId))!;
  if (target === undefined) conversationEvents(outbox, actor, null, after);
  messageCreated(outbox, actor, message, after.assignee);
  if (target !== undefined && target.status !== 'open' && after.status === 'open') {
    // Reopened (closed) or woken (snoozed): a snoozed conversation's wake-up job is not needed now.
    if (target.status === 'pending') await cancelJob(tx, WAKE_KIND, conversationId);
    conversationStatusChanged(outbox, actor, after, target.status);
  }
  const autoReply =
    m.automated === true
      ? null
      : await maybeAutoReply(
          tx,
          outbox,
          { id: conversationId, channel: m.channel, assignee: after.assignee },
          at,
          sender,
        );
  return {
    stored: true,
    message,
    guestId: guest.id,
    guestCreated: guest.created,
    conversationCreated: target === undefined,
    autoReply,
  };
}

type ConversationTarget = { id: string; status: string } | undefined;

/**
 * The conversation the message joins; undefined when a new one is needed. A thread is joined only
 * by its own guest (the sender's address is the guest's, any case): a Message-ID proves nothing
 * of who writes, as anyone who saw one (a forwarded mail, a shared inbox) can name it.
 */
async function conversationFor(tx: Executor, guestId: string, m: Inbound): Promise<ConversationTarget> {
  const thread = (m.thread ?? []).filter((id) => id !== '').slice(0, 100);
  const sender = m.sender.email?.toLowerCase();
  if (thread.length > 0 && sender) {
    const answered = await tx
      .selectFrom('messages as m')
      .innerJoin('conversations as c', 'c.id', 'm.conversation_id')
      .innerJoin('guests as g', 'g.id', 'c.guest_id')
      .where('m.external_id', 'in', thread)
      .where('c.channel', '=', m.channel)
      .where('g.email_lower', '=', sender)
      .select(['c.id', 'c.status'])
      .orderBy('m.created_at', 'desc')
      .limit(1)
      .executeTakeFirst();
    if (answered !== undefined) return answered;
  }
  const latest = await latestConversationOf(tx, guestId, m.channel);
  return latest && { id: latest.id, status: latest.status };
}

/**
 * The `auto_reply` setting, when enabled and the hotel is closed (`business_hours`): one system
 * reply per conversation per closed period, sent over the conversation's channel like any text.
 */
async function maybeAutoReply(
  tx: Tx,
  outbox: Outbox,
  c: { id: string; channel: Channel; assignee: string | null },
  inboundAt: string,
  sender: LocalSender | null,
): Promise<MessageView | null> {
  const auto = (await getSetting(tx, 'auto_reply'))?.value as { enabled?: boolean; message?: string } | undefined;
  if (auto?.enabled !== true || !auto.message) return null;
  const hours = (await getSetting(tx, 'business_hours'))?.value as BusinessHours | undefined;
  const now = new Date(inboundAt);
  if (hours === undefined || isOpen(hours, now)) return null;
  const since = closedSince(hours, now);
  let earlier = tx
    .selectFrom('messages')
    .where('conversation_id', '=', c.id)
    .where('sender_type', '=', 'system')
    .select('id');
  if (since !== null) earlier = earlier.where('created_at', '>=', since.toISOString());
  if ((await earlier.limit(1).executeTakeFirst()) !== undefined) return null;
  // A millisecond after the guest's message, so the reply sorts after it.
  const at = new Date(now.getTime() + 1).toISOString();
  const reply = await storeOutbound(tx, c.channel, {
    conversation_id: c.id,
    direction: 'outbound',
    type: 'text',
    content: auto.message,
    sender_type: 'system',
    sender_id: null,
    delivery_status: 'queued',
    created_at: at,
  });
  await touchConversation(tx, c.id, at, false);
  if (sender !== null) tx.onCommit(() => sender.queued(c.id));
  messageCreated(outbox, SYSTEM, reply, c.assignee);
  return reply;
}
