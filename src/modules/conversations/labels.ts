// Owns conversation labels: normalising what a caller sends (trimmed, lower-case, each once),
// checking it against the `labels` setting, and writing a conversation's labels (its array and its
// conversation_labels rows, migration 028). Listing by label is label-lists.ts.
import { nowIso, toJson } from '../../db/store.js';
import type { Executor } from '../../db/types.js';
import { fieldError } from '../../lib/errors.js';
import { getSetting } from '../settings/repository.js';
import { MAX_LABELS } from './schemas.js';

/** Trimmed, lower-case, each once in the order first given. */
export const normaliseLabels = (labels: readonly string[]): string[] => [
  ...new Set(labels.map((l) => l.trim().toLowerCase())),
];

/** The labels of `?label=a,b`: normalised, empty parts dropped; VALIDATION_ERROR past MAX_LABELS. */
export function labelFilter(text: string | undefined): string[] | undefined {
  if (text === undefined) return undefined;
  const labels = normaliseLabels(text.split(',')).filter((l) => l !== '');
  if (labels.length > MAX_LABELS) throw fieldError('label', `must name at most ${MAX_LABELS} labels`);
  return labels.length === 0 ? undefined : labels;
}

/**
 * The labels to store for what a caller sent on `field`: VALIDATION_ERROR when one is blank, when
 * more than MAX_LABELS remain, or when the `labels` setting lists labels and one is not among them.
 */
export async function checkedLabels(db: Executor, given: readonly string[], field = 'labels'): Promise<string[]> {
  const labels = normaliseLabels(given);
  if (labels.includes('')) throw fieldError(field, 'must not hold a blank label');
  if (labels.length > MAX_LABELS) throw fieldError(field, `must hold at most ${MAX_LABELS} distinct labels`);
  const allowed = (await getSetting(db, 'labels'))?.value;
  if (Array.isArray(allowed) && allowed.length > 0) {
    const known = new Set(allowed.map((l) => String(l).trim().toLowerCase()));
    const unknown = labels.filter((l) => !known.has(l));
    if (unknown.length > 0) {
      throw fieldError(field, `must be labels the labels setting lists; not listed: ${unknown.join(', ')}`);
    }
  }
  return labels;
}

/**
 * Replaces a conversation's labels. Call after any change to its row in the same transaction: the
 * label rows copy its list columns as they are now (the trigger keeps them in step afterwards).
 */
export async function writeLabels(db: Executor, conversationId: string, labels: readonly string[]): Promise<void> {
  await db
    .updateTable('conversations')
    .set({ labels: toJson(labels), updated_at: nowIso() })
    .where('id', '=', conversationId)
    .execute();
  await db.deleteFrom('conversation_labels').where('conversation_id', '=', conversationId).execute();
  if (labels.length === 0) return;
  const copy = await db
    .selectFrom('conversations')
    .select(['last_message_at', 'status', 'channel', 'assignee'])
    .where('id', '=', conversationId)
    .executeTakeFirstOrThrow();
  await db
    .insertInto('conversation_labels')
    .values(labels.map((label) => ({ conversation_id: conversationId, label, ...copy })))
    .execute();
}
