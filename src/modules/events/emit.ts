// Owns which events a change produces: write paths hand over the record before and after their
// change and these rules decide the events (created / updated / the specific ones such as
// conversation.assigned), their `changes`, and who may read them.
import { isDeepStrictEqual } from 'node:util';
import type { ConversationView, MessageView } from '../conversations/schemas.js';
import type { TaskView } from '../tasks/schemas.js';
import type { Outbox } from './outbox.js';
import type { Actor, Changes } from './schemas.js';

/** Who made a change: the staff member, or the API key (docs/integrations.md) that called. */
export const staffActor = (user: { id: string; kind?: 'staff' | 'api_key' }): Actor => ({
  type: user.kind === 'api_key' ? 'api_key' : 'staff',
  id: user.id,
});
export const SYSTEM: Actor = { type: 'system', id: null };

/**
 * Each top-level field whose value differs, as { from, to }. updatedAt is left out: it changes
 * with every write and says nothing an integration acts on.
 */
export function changesOf(before: object, after: object): Changes {
  const b = before as Record<string, unknown>;
  const out: Changes = {};
  for (const [key, to] of Object.entries(after)) {
    if (key === 'updatedAt') continue;
    if (!isDeepStrictEqual(b[key], to)) out[key] = { from: b[key] ?? null, to };
  }
  return out;
}

const isEmpty = (c: Changes) => Object.keys(c).length === 0;

/**
 * A conversation created or changed by a PATCH: `conversation.updated` with every changed field,
 * then `conversation.status_changed` (changes: status) if the status moved and
 * `conversation.assigned` (changes: assignee, also when unassigned) if the assignee did.
 * A write that changes nothing emits nothing.
 */
export function conversationEvents(
  outbox: Outbox,
  actor: Actor,
  before: ConversationView | null,
  after: ConversationView,
): void {
  const base = { actor, data: after, conversationId: after.id, assignee: after.assignee };
  if (before === null) {
    outbox.add({ type: 'conversation.created', ...base });
    return;
  }
  const changes = changesOf(before, after);
  if (isEmpty(changes)) return;
  outbox.add({ type: 'conversation.updated', ...base, changes });
  if (changes.status) outbox.add({ type: 'conversation.status_changed', ...base, changes: { status: changes.status } });
  if (changes.assignee) outbox.add({ type: 'conversation.assigned', ...base, changes: { assignee: changes.assignee } });
}

/** A status change that is a side effect (an inbound message reopening a closed conversation). */
export function conversationStatusChanged(outbox: Outbox, actor: Actor, after: ConversationView, from: string): void {
  outbox.add({
    type: 'conversation.status_changed',
    actor,
    data: after,
    changes: { status: { from, to: after.status } },
    conversationId: after.id,
    assignee: after.assignee,
  });
}

export function messageCreated(outbox: Outbox, actor: Actor, message: MessageView, assignee: string | null): void {
  outbox.add({
    type: 'message.created',
    actor,
    data: message,
    conversationId: message.conversationId,
    assignee,
  });
}

/** `task.created`, or `task.updated` plus `task.completed` when the task entered completed. */
export function taskEvents(outbox: Outbox, actor: Actor, before: TaskView | null, after: TaskView): void {
  const base = { actor, data: after, taskId: after.id, conversationId: after.conversationId, assignee: after.assignee };
  if (before === null) {
    outbox.add({ type: 'task.created', ...base });
    return;
  }
  const changes = changesOf(before, after);
  if (isEmpty(changes)) return;
  outbox.add({ type: 'task.updated', ...base, changes });
  if (after.status === 'completed' && before.status !== 'completed') {
    outbox.add({ type: 'task.completed', ...base, changes: { status: changes.status! } });
  }
}

type Resource = 'guest' | 'knowledge' | 'staff' | 'stay';

/** `<resource>.created`, or `<resource>.updated` with its changes (nothing when nothing changed). */
export function recordEvents<T extends object>(
  outbox: Outbox,
  resource: Resource,
  actor: Actor,
  before: T | null,
  after: T,
): void {
  if (before === null) {
    outbox.add({ type: `${resource}.created`, actor, data: after });
    return;
  }
  const changes = changesOf(before, after);
  if (!isEmpty(changes)) outbox.add({ type: `${resource}.updated`, actor, data: after, changes });
}

/** The entry as it was when deleted: an integration can still tell what went. */
export function knowledgeDeleted(outbox: Outbox, actor: Actor, entry: object): void {
  outbox.add({ type: 'knowledge.deleted', actor, data: entry });
}

interface SettingLike {
  key: string;
  value: unknown;
}

/** A setting written or reset: `setting.updated` with changes: { value: { from, to } }. */
export function settingUpdated(outbox: Outbox, actor: Actor, before: SettingLike | undefined, after: SettingLike) {
  const from = before?.value ?? null;
  if (isDeepStrictEqual(from, after.value) && before !== undefined) return;
  outbox.add({ type: 'setting.updated', actor, data: after, changes: { value: { from, to: after.value } } });
}
