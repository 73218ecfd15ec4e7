// Owns the rules of conversations and messages that span several rows: who may create, change
// or write to which conversation, and keeping a conversation's lastMessageAt / messageCount in
// step with its messages. Every operation here is one transaction, its events written in it.

import type { Store } from '../../db/store.js';
import { nowIso } from '../../db/store.js';
import type { Executor } from '../../db/types.js';
import { isElevated, visibleTo } from '../../lib/access.js';
import type { AuthUser } from '../../lib/auth.js';
import { type FieldError, forbidden, notFound, validation } from '../../lib/errors.js';
import { newId } from '../../lib/ids.js';
import { insertSend } from '../channels/sends-repository.js';
import { conversationEvents, conversationStatusChanged, messageCreated, staffActor } from '../events/emit.js';
import { withEvents } from '../events/outbox.js';
import { insertMessage } from './messages-repository.js';
import {
  findConversation,
  findConversationRef,
  findGuestName,
  insertConversation,
  isActiveStaff,
  touchConversation,
  updateConversationRow,
} from './repository.js';
import type {
  ConversationChanges,
  ConversationView,
  CreateConversationInput,
  MessageView,
  SendMessageInput,
} from './schemas.js';

const WHAT = 'Conversation';

/** What a guest lacks to be reached on a channel: e-mail needs an address, SMS and WhatsApp a phone. */
function missingAddress(channel: string, guest: { email: string | null; phone: string | null }): string | null {
  if (channel === 'email' && guest.email === null) return 'the guest has no email address for the email channel';
  if ((channel === 'sms' || channel === 'whatsapp') && guest.phone === null) {
    return `the guest has no phone number for the ${channel} channel`;
  }
  return null;
}

/** The conversation's reference row if the caller may see it (404 missing, 403 someone else's). */
export async function visibleConversationRef(db: Executor, user: AuthUser, id: string) {
  return visibleTo(user, await findConversationRef(db, id), (c) => c.assignee, WHAT, id);
}

/** The conversation if the caller may see it (404 missing, 403 someone else's). */
export async function visibleConversation(db: Executor, user: AuthUser, id: string): Promise<ConversationView> {
  return visibleTo(user, await findConversation(db, id), (c) => c.assignee, WHAT, id);
}

async function assigneeProblem(db: Executor, assignee: string | null | undefined): Promise<FieldError | null> {
  if (assignee === null || assignee === undefined) return null;
  return (await isActiveStaff(db, assignee))
    ? null
    : { field: 'assignee', message: 'must be the id of an active staff member' };
}

export async function createConversation(store: Store, user: AuthUser, body: CreateConversationInput) {
  let assignee = body.assignee ?? null;
  if (!isElevated(user)) {
    if (body.assignee !== undefined && body.assignee !== user.id) {
      throw forbidden('A staff member may only create conversations assigned to themselves');
    }
    assignee = user.id;
  }
  return withEvents(store, async (tx, outbox): Promise<ConversationView> => {
    const guest = await findGuestName(tx, body.guestId);
    const problems: FieldError[] = [];
    if (guest === undefined) problems.push({ field: 'guestId', message: 'must be the id of an existing guest' });
    else {
      const missing = missingAddress(body.channel, guest);
      if (missing) problems.push({ field: 'channel', message: missing });
    }
    const bad = await assigneeProblem(tx, assignee);
    if (bad) problems.push(bad);
    if (problems.length > 0) throw validation(problems);

    const id = newId('cnv');
    const at = nowIso();
    const hasFirst = body.content !== undefined;
    await insertConversation(tx, {
      id,
      guestId: body.guestId,
      channel: body.channel,
      subject: body.subject ?? null,
      assignee,
      messageCount: hasFirst ? 1 : 0,
      at,
    });
    const first = hasFirst
      ? await storeOutbound(tx, body.channel, outbound(id, 'text', body.content!, user.id, at))
      : null;
    const created: ConversationView = {
      id,
      guestId: body.guestId,
      guest: { id: body.guestId, name: guest!.name },
      channel: body.channel,
      status: 'open',
      assignee,
      subject: body.subject ?? null,
      lastMessageAt: at,
      messageCount: hasFirst ? 1 : 0,
      createdAt: at,
      updatedAt: at,
    };
    conversationEvents(outbox, staffActor(user), null, created);
    if (first) messageCreated(outbox, staffActor(user), first, assignee);
    return created;
  });
}

function outbound(conversationId: string, type: 'text' | 'note', content: string, staffId: string, at: string) {
  return {
    conversation_id: conversationId,
    direction: 'outbound' as const,
    type,
    content,
    sender_type: 'staff' as const,
    sender_id: staffId,
    // A text waits for channel delivery to send it; a note never leaves the team.
    delivery_status: type === 'note' ? ('delivered' as const) : ('queued' as const),
    created_at: at,
  };
}

/**
 * Stores an outbound message and, for a text, its delivery: a `web` text is sent at commit (the
 * widget's backend reads it from the feed), any other gets a send job in this same transaction.
 */
async function storeOutbound(tx: Executor, channel: string, m: ReturnType<typeof outbound>): Promise<MessageView> {
  if (m.type !== 'text') return insertMessage(tx, m);
  if (channel === 'web') return insertMessage(tx, { ...m, delivery_status: 'sent', sent_at: m.created_at });
  const message = await insertMessage(tx, m);
  await insertSend(tx, message.id, m.conversation_id, m.created_at);
  return message;
}

export async function sendMessage(store: Store, user: AuthUser, conversationId: string, body: SendMessageInput) {
  return withEvents(store, async (tx, outbox): Promise<MessageView> => {
    const ref = await visibleConversationRef(tx, user, conversationId);
    const at = nowIso();
    const message = await storeOutbound(
      tx,
      ref.channel,
      outbound(conversationId, body.type ?? 'text', body.content, user.id, at),
    );
    await touchConversation(tx, conversationId, at, false);
    messageCreated(outbox, staffActor(user), message, ref.assignee);
    return message;
  });
}

/**
 * Applies a status and/or assignee change. A staff-role caller may change only the status of
 * their own conversations: naming `assignee` at all, even themselves, is refused.
 */
export async function updateConversation(store: Store, user: AuthUser, id: string, changes: ConversationChanges) {
  return withEvents(store, async (tx, outbox): Promise<ConversationView> => {
    await visibleConversationRef(tx, user, id);
    if (changes.assignee !== undefined && !isElevated(user)) {
      throw forbidden('A staff member may change only the status of a conversation, not its assignee');
    }
    const bad = await assigneeProblem(tx, changes.assignee);
    if (bad) throw validation([bad]);
    const before = (await findConversation(tx, id))!;
    await updateConversationRow(tx, id, changes, nowIso());
    const after = (await findConversation(tx, id))!;
    conversationEvents(outbox, staffActor(user), before, after);
    return after;
  });
}

/**
 * Records a message the guest sent (for channel delivery's inbound side): an inbound text from
 * the guest, counted on the conversation, and a closed conversation reopens because the guest
 * is talking again. Throws NOT_FOUND for an unknown conversation.
 */
export async function recordInboundMessage(
  store: Store,
  input: { conversationId: string; content: string },
): Promise<MessageView> {
  return withEvents(store, async (tx, outbox) => {
    const conversation = await findConversationRef(tx, input.conversationId);
    if (conversation === undefined) throw notFound(WHAT, input.conversationId);
    const at = nowIso();
    const message = await insertMessage(tx, {
      conversation_id: conversation.id,
      direction: 'inbound',
      type: 'text',
      content: input.content,
      sender_type: 'guest',
      sender_id: conversation.guest_id,
      delivery_status: 'received',
      created_at: at,
    });
    await touchConversation(tx, conversation.id, at, true);
    const after = (await findConversation(tx, conversation.id))!;
    const guest = { type: 'guest' as const, id: conversation.guest_id };
    messageCreated(outbox, guest, message, after.assignee);
    if (conversation.status === 'closed' && after.status === 'open') {
      conversationStatusChanged(outbox, guest, after, 'closed');
    }
    return message;
  });
}
