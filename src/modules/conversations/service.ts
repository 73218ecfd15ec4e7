// Owns the rules of conversations and messages that span several rows: who may create, change
// or write to which conversation, and keeping a conversation's lastMessageAt / messageCount in
// step with its messages. Every operation here is one transaction, its events written in it.

import type { Store } from '../../db/store.js';
import { nowIso } from '../../db/store.js';
import type { Executor, Tx } from '../../db/types.js';
import { isElevated, visibleTo } from '../../lib/access.js';
import type { AuthUser } from '../../lib/auth.js';
import { type FieldError, forbidden, validation } from '../../lib/errors.js';
import { newId } from '../../lib/ids.js';
import { type AttachmentDeps, attachToMessage, withAttachments } from '../attachments/service.js';
import { renderCanned } from '../canned-responses/send.js';
import { assertWhatsAppWindow, type RenderedTemplate, renderTemplate } from '../channels/rules.js';
import { insertSend, type LocalSender } from '../channels/sends-repository.js';
import { conversationEvents, messageCreated, staffActor } from '../events/emit.js';
import { withEvents } from '../events/outbox.js';
import type { Opened } from '../reports/recorder.js';
import { slaView } from '../reports/sla.js';
import { currentStay } from '../stays/current.js';
import { checkedLabels, writeLabels } from './labels.js';
import { insertMessage, type NewMessage } from './messages-repository.js';
import {
  advanceConversationRef,
  findConversation,
  findConversationRef,
  findGuestName,
  insertConversation,
  isActiveStaff,
  updateConversationRow,
} from './repository.js';
import type {
  ConversationChanges,
  ConversationView,
  CreateConversationInput,
  MessageView,
  SendMessageInput,
} from './schemas.js';
import { checkSnooze, type Jobs, scheduleWake, snoozeAfter } from './snooze.js';

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

export async function createConversation(
  store: Store,
  user: AuthUser,
  body: CreateConversationInput,
  sender: LocalSender | null = null,
) {
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
    if (body.content !== undefined && body.channel === 'whatsapp') await assertWhatsAppWindow(tx, body.guestId);

    const id = newId('cnv');
    const at = nowIso();
    const hasFirst = body.content !== undefined;
    const opened = await insertConversation(tx, {
      id,
      guestId: body.guestId,
      channel: body.channel,
      subject: body.subject ?? null,
      assignee,
      messageCount: hasFirst ? 1 : 0,
      at,
    });
    const first = hasFirst
      ? await storeOutbound(tx, body.channel, outbound(id, 'text', body.content!, user, at), null, sender, opened)
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
      labels: [],
      stay: await currentStay(tx, body.guestId),
      // A resolution target may run from the start (the sla setting); a staff text into it changes none.
      sla: slaView(opened.sla),
      createdAt: at,
      updatedAt: at,
      snoozedUntil: null,
    };
    conversationEvents(outbox, staffActor(user), null, created);
    if (first) messageCreated(outbox, staffActor(user), first, assignee);
    return created;
  });
}

function outbound(conversationId: string, type: 'text' | 'note', content: string, by: AuthUser, at: string) {
  return {
    conversation_id: conversationId,
    direction: 'outbound' as const,
    type,
    content,
    // An integration's API key is named as itself, never as a staff member.
    sender_type: by.kind === 'api_key' ? ('api_key' as const) : ('staff' as const),
    sender_id: by.id,
    // A text waits for channel delivery to send it; a note never leaves the team.
    delivery_status: type === 'note' ? ('delivered' as const) : ('queued' as const),
    created_at: at,
  };
}

/**
 * Stores an outbound message and, for a text, its delivery: a `web` text is sent at commit (the
 * widget's backend reads it from the feed), any other gets a send job in this same transaction.
 */
export async function storeOutbound(
  tx: Tx,
  channel: string,
  m: NewMessage,
  template: RenderedTemplate | null = null,
  sender: LocalSender | null = null,
  opened?: Opened,
): Promise<MessageView> {
  if (m.type !== 'text') return insertMessage(tx, m, opened);
  if (channel === 'web') {
    if (sender !== null) tx.onCommit(() => sender.sentAtCommit(channel));
    return insertMessage(tx, { ...m, delivery_status: 'sent', sent_at: m.created_at }, opened);
  }
  const message = await insertMessage(tx, m, opened);
  // Claimed at birth by this instance's dispatcher when it has room: sent once this commits.
  const lease = sender?.lease(channel) ?? null;
  const fresh = opened !== undefined && opened.c.id === m.conversation_id;
  if (await insertSend(tx, message.id, m.conversation_id, channel, message.createdAt, template, lease, fresh)) {
    const claimed = {
      messageId: message.id,
      conversationId: m.conversation_id,
      channel,
      attempts: 1,
      leaseUntil: lease!.untilMs,
    };
    tx.onCommit(() => sender!.adopt(claimed));
  } else if (sender !== null) tx.onCommit(() => sender.queued(m.conversation_id));
  return message;
}

/** The content and kind of a message to send, from its body; VALIDATION_ERROR when they do not fit. */
function messageParts(body: SendMessageInput, channel: string) {
  const type = body.type ?? 'text';
  if (type === 'template') {
    const problems: FieldError[] = [];
    if (body.template === undefined) problems.push({ field: 'template', message: 'is required when type is template' });
    if (body.content !== undefined) {
      problems.push({
        field: 'content',
        message: "must be left out when type is template (the template's body is sent)",
      });
    }
    if (channel !== 'whatsapp')
      problems.push({ field: 'type', message: 'template is for WhatsApp conversations only' });
    if (body.cannedResponseId !== undefined) {
      problems.push({ field: 'cannedResponseId', message: 'is for type text or note only' });
    }
    if (body.attachments !== undefined) problems.push({ field: 'attachments', message: 'are for text and note only' });
    if (problems.length > 0) throw validation(problems);
    return { type: 'template' as const, template: body.template! };
  }
  const problems: FieldError[] = [];
  if (body.content === undefined && body.cannedResponseId === undefined && body.attachments === undefined) {
    problems.push({
      field: 'content',
      message: `is required when type is ${type} (unless cannedResponseId or attachments are sent)`,
    });
  }
  if (body.content !== undefined && body.cannedResponseId !== undefined) {
    problems.push({ field: 'cannedResponseId', message: 'must be left out when content is given' });
  }
  if (body.template !== undefined) problems.push({ field: 'template', message: 'is for type template only' });
  if (problems.length > 0) throw validation(problems);
  return { type, content: body.content, cannedResponseId: body.cannedResponseId };
}

export async function sendMessage(
  store: Store,
  user: AuthUser,
  conversationId: string,
  body: SendMessageInput,
  sender: LocalSender | null = null,
  files: AttachmentDeps | null = null,
) {
  return withEvents(store, async (tx, outbox): Promise<MessageView> => {
    // Its time taken and the conversation touched first, in one statement that also reads what the
    // rules below need, under the row's lock: texts of a conversation commit in the order of their
    // times (the order they are sent in). A caller who may not see it, or a body the rules refuse,
    // throws, and the transaction rolls the touch back.
    const ref = visibleTo(
      user,
      await advanceConversationRef(tx, conversationId),
      (c) => c.assignee,
      WHAT,
      conversationId,
    );
    const at = ref.last_message_at;
    const parts = messageParts(body, ref.channel);
    let content: string;
    let template: RenderedTemplate | null = null;
    if (parts.type === 'template') {
      template = await renderTemplate(tx, parts.template);
      content = template.content;
    } else {
      // A canned response is filled in for this conversation, then sent as if its text were typed.
      content =
        parts.content ??
        (parts.cannedResponseId === undefined
          ? ''
          : await renderCanned(tx, parts.cannedResponseId, { id: conversationId, guestId: ref.guest_id }, user));
      if (parts.type === 'text' && ref.channel === 'whatsapp') await assertWhatsAppWindow(tx, ref.guest_id);
    }
    let message = await storeOutbound(
      tx,
      ref.channel,
      outbound(conversationId, parts.type === 'note' ? 'note' : 'text', content, user, at),
      template,
      sender,
    );
    if (body.attachments !== undefined && files !== null) {
      await attachToMessage(tx, user, body.attachments, { conversationId, messageId: message.id, at });
      message = (await withAttachments(tx, files.signer, [message]))[0]!;
    }
    messageCreated(outbox, staffActor(user), message, ref.assignee);
    return message;
  });
}

/**
 * Applies a status, assignee and/or labels change. A staff-role caller may change only the status
 * and labels of their own conversations: naming `assignee` at all, even themselves, is refused.
 */
export async function updateConversation(
  store: Store,
  user: AuthUser,
  id: string,
  changes: ConversationChanges,
  jobs: Jobs = null,
) {
  return withEvents(store, async (tx, outbox): Promise<ConversationView> => {
    await visibleConversationRef(tx, user, id);
    if (changes.assignee !== undefined && !isElevated(user)) {
      throw forbidden('A staff member may change only the status of a conversation, not its assignee');
    }
    const bad = await assigneeProblem(tx, changes.assignee);
    if (bad) throw validation([bad]);
    checkSnooze(changes);
    const { labels, ...row } = changes;
    const stored = labels === undefined ? undefined : await checkedLabels(tx, labels);
    const before = (await findConversation(tx, id))!;
    const snoozedUntil = snoozeAfter(changes, before);
    await updateConversationRow(tx, id, { ...row, snoozedUntil }, nowIso());
    if (snoozedUntil !== undefined) await scheduleWake(tx, jobs, id, before.snoozedUntil, snoozedUntil);
    if (stored !== undefined) await writeLabels(tx, id, stored);
    const after = (await findConversation(tx, id))!;
    conversationEvents(outbox, staffActor(user), before, after);
    return after;
  });
}
