// Owns conversation labels: normalising what a caller sends (trimmed, lower-case, each once),
// checking it against the `labels` setting, writing a conversation's labels (its array and its
// conversation_labels rows, migration 028), and the list of the conversations carrying any of some
// labels, latest activity first.
import { sql } from 'kysely';
import { type ListParam, paginate } from '../../db/paginate.js';
import { nowIso, toIso, toJson } from '../../db/store.js';
import type { Executor } from '../../db/types.js';
import { fieldError } from '../../lib/errors.js';
import { getSetting } from '../settings/repository.js';
import type { ConversationFilter, ConversationListRow } from './repository.js';
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

export type LabelFilter = ConversationFilter & { labels: string[] };

const labelParams = (f: LabelFilter, p: ListParam) => f.labels.map((_, i) => p(`label${i}`));

/** `q` (over conversation_labels as `cl`) narrowed by the filters other than the labels. */
// biome-ignore lint/suspicious/noExplicitAny: conversation_labels or its counts, both with these columns
function otherFilters(q: any, f: LabelFilter, p: ListParam, assignee: 'cl.assignee' | 'assignee_key') {
  const none = assignee === 'cl.assignee' ? null : '';
  if (f.status !== undefined) q = q.where(assignee === 'cl.assignee' ? 'cl.status' : 'status', '=', p('status'));
  if (f.channel !== undefined) q = q.where(assignee === 'cl.assignee' ? 'cl.channel' : 'channel', '=', p('channel'));
  if (f.assignee === null) q = none === null ? q.where(assignee, 'is', null) : q.where(assignee, '=', none);
  else if (f.assignee !== undefined) q = q.where(assignee, '=', p('assignee'));
  if (f.onlyAssignee !== undefined) q = q.where(assignee, '=', p('onlyAssignee'));
  return q;
}

const COLUMNS = [
  'c.id',
  'c.guest_id',
  'g.name as guest_name',
  'c.channel',
  'c.status',
  'c.assignee',
  'c.subject',
  'c.last_message_at',
  'c.message_count',
  'c.labels',
  'c.created_at',
  'c.updated_at',
] as const;

/**
 * Conversations carrying any of the labels, latest activity first: ranges of conversation_labels'
 * (label, last_message_at, conversation_id) index, the other filters tested on each entry itself.
 * With several labels a conversation carrying more than one is met once, at its lowest label.
 */
export const labelPages = paginate<LabelFilter, ConversationListRow>({
  name: 'label-conversations',
  from(db, f, p) {
    const labels = labelParams(f, p);
    let q = db.selectFrom('conversation_labels as cl').where('cl.label', 'in', labels);
    if (labels.length > 1) {
      q = q.where(
        sql<boolean>`not exists (select 1 from conversation_labels d where d.conversation_id = cl.conversation_id and d.label < cl.label and d.label in (${sql.join(labels)}))`,
      );
    }
    return q;
  },
  where: (q, f, p) => otherFilters(q, f, p, 'cl.assignee'),
  columns: (q) =>
    q
      .innerJoin('conversations as c', 'c.id', 'cl.conversation_id')
      .innerJoin('guests as g', 'g.id', 'c.guest_id')
      .select(COLUMNS),
  order: ['cl.last_message_at', 'cl.conversation_id'],
  direction: 'desc',
  keyOf: (row) => [toIso(row.last_message_at), row.id],
  count(x, f, p) {
    // One label: the sum of its rows of conversation_label_counts (kept by triggers). Several: the
    // entries of their ranges, each conversation once (grows with the labels' sizes).
    if (f.labels.length === 1) {
      const q = x
        .selectFrom('conversation_label_counts')
        .where('label', '=', p('label0'))
        .select((eb) => eb.fn.coalesce(eb.fn.sum<number>('n'), eb.lit(0)).as('n'));
      return otherFilters(q, f, p, 'assignee_key');
    }
    const labels = labelParams(f, p);
    const q = x
      .selectFrom('conversation_labels as cl')
      .where('cl.label', 'in', labels)
      .where(
        sql<boolean>`not exists (select 1 from conversation_labels d where d.conversation_id = cl.conversation_id and d.label < cl.label and d.label in (${sql.join(labels)}))`,
      )
      .select((eb) => eb.fn.countAll<number>().as('n'));
    return otherFilters(q, f, p, 'cl.assignee');
  },
  shapeOf: (f) =>
    [
      f.labels.length,
      f.status !== undefined,
      f.channel !== undefined,
      f.assignee === undefined ? 'any' : f.assignee === null ? 'none' : 'one',
      f.onlyAssignee !== undefined,
    ].join(),
  values: (f) => ({
    ...Object.fromEntries(f.labels.map((l, i) => [`label${i}`, l])),
    status: f.status,
    channel: f.channel,
    assignee: f.assignee ?? null,
    onlyAssignee: f.onlyAssignee,
  }),
});
