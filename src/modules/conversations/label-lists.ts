// Owns listing the conversations that carry any of some labels, latest activity first, from
// conversation_labels (migration 028): each label's conversations are a range of its (label,
// last_message_at, conversation_id) index, filtered on the row itself (it copies the
// conversation's status, channel and assignee), and counted from conversation_label_counts.
import { type SelectQueryBuilder, sql } from 'kysely';
import { type ListParam, type PageRequest, type PageResult, paginate } from '../../db/paginate.js';
import { toIso } from '../../db/store.js';
import type { Database, Executor } from '../../db/types.js';
import { COLUMNS, type ConversationFilter, type ConversationListRow } from './repository.js';

export type LabelFilter = ConversationFilter & { labels: string[] };
type Value = (name: string) => never;

// biome-ignore lint/suspicious/noExplicitAny: conversation_labels or its counts, both with these columns
type AnyQuery = SelectQueryBuilder<Database, any, any>;

/** `q` (conversation_labels as cl, or its counts) narrowed by the filters other than the labels. */
function otherFilters<Q extends AnyQuery>(q: Q, f: LabelFilter, v: Value, on: 'rows' | 'counts'): Q {
  const [status, channel, assignee] =
    on === 'rows' ? ['cl.status', 'cl.channel', 'cl.assignee'] : ['status', 'channel', 'assignee_key'];
  let out: AnyQuery = q;
  if (f.status !== undefined) out = out.where(status!, '=', v('status'));
  if (f.channel !== undefined) out = out.where(channel!, '=', v('channel'));
  if (f.assignee === null) out = on === 'rows' ? out.where(assignee!, 'is', null) : out.where(assignee!, '=', '');
  else if (f.assignee !== undefined) out = out.where(assignee!, '=', v('assignee'));
  if (f.onlyAssignee !== undefined) out = out.where(assignee!, '=', v('onlyAssignee'));
  return out as Q;
}

const valuesOf = (f: LabelFilter): Record<string, unknown> => ({
  label: f.labels[0],
  status: f.status,
  channel: f.channel,
  assignee: f.assignee ?? null,
  onlyAssignee: f.onlyAssignee,
});

const keyOf = (row: { last_message_at: string | Date; id: string }): [string, string] => [
  toIso(row.last_message_at),
  row.id,
];

/** The conversations carrying one label: its index range, the page's rows joined alone. */
export const labelPages = paginate<LabelFilter, ConversationListRow>({
  name: 'label-conversations',
  from: (db, _f, p) => db.selectFrom('conversation_labels as cl').where('cl.label', '=', p('label')),
  where: (q, f, p) => otherFilters(q, f, p, 'rows'),
  columns: (q) =>
    q
      .innerJoin('conversations as c', 'c.id', 'cl.conversation_id')
      .innerJoin('guests as g', 'g.id', 'c.guest_id')
      .select(COLUMNS),
  order: ['cl.last_message_at', 'cl.conversation_id'],
  direction: 'desc',
  keyOf,
  /** The label's rows of conversation_label_counts (kept by triggers), under the same filters. */
  count: (x, f, p: ListParam) =>
    otherFilters(
      x
        .selectFrom('conversation_label_counts')
        .where('label', '=', p('label'))
        .select((eb) => eb.fn.coalesce(eb.fn.sum<number>('n'), eb.lit(0)).as('n')),
      f,
      p,
      'counts',
    ),
  shapeOf: (f) =>
    [
      f.status !== undefined,
      f.channel !== undefined,
      f.assignee === undefined ? 'any' : f.assignee === null ? 'none' : 'one',
      f.onlyAssignee !== undefined,
    ].join(),
  values: valuesOf,
});

/**
 * How many conversations carry any of the labels: the largest label's count (conversation_label_counts),
 * plus, for each other label in falling size, its conversations carrying none of the labels before
 * it. Only the smaller labels' index ranges are read, each entry with one primary-key probe.
 */
async function anyLabelTotal(x: Executor, f: LabelFilter): Promise<number> {
  const v = ((name: string) => valuesOf(f)[name]) as Value;
  const sizes = await otherFilters(
    x
      .selectFrom('conversation_label_counts')
      .where('label', 'in', f.labels)
      .select((eb) => ['label', eb.fn.sum<number>('n').as('n')])
      .groupBy('label'),
    f,
    v,
    'counts',
  ).execute();
  const bySize = sizes
    .map((s) => ({ label: s.label as string, n: Number(s.n) }))
    .filter((s) => s.n > 0)
    .sort((a, b) => b.n - a.n || (a.label < b.label ? -1 : 1));
  let total = bySize[0]?.n ?? 0;
  for (let i = 1; i < bySize.length; i++) {
    const before = bySize.slice(0, i).map((s) => s.label);
    const row = await otherFilters(
      x
        .selectFrom('conversation_labels as cl')
        .where('cl.label', '=', bySize[i]!.label)
        .where(
          sql<boolean>`not exists (select 1 from conversation_labels d where d.conversation_id = cl.conversation_id and d.label in (${sql.join(before)}))`,
        )
        .select((eb) => eb.fn.countAll<number>().as('n')),
      f,
      v,
      'rows',
    ).executeTakeFirst();
    total += Number(row?.n ?? 0);
  }
  return total;
}

/**
 * The keys of the first `n` conversations (after `after`, when given) carrying any of the labels:
 * each label's first `n` entries, read in one statement as ranges of its index, merged and each
 * conversation kept once. A conversation among the first `n` of the merged list is among the first
 * `n` of every label it carries, so none is missed.
 */
async function firstKeys(
  x: Executor,
  f: LabelFilter,
  n: number,
  after: readonly [unknown, unknown] | null,
): Promise<[string, string][]> {
  const v = ((name: string) => valuesOf(f)[name]) as Value;
  const branch = (label: string, i: number) => {
    let q = otherFilters(
      x
        .selectFrom('conversation_labels as cl')
        .where('cl.label', '=', label)
        .select(['cl.conversation_id as id', 'cl.last_message_at as at']),
      f,
      v,
      'rows',
    );
    if (after !== null) {
      q = q.where(sql<boolean>`(cl.last_message_at, cl.conversation_id) < (${after[0]}, ${after[1]})`);
    }
    const ordered = q.orderBy('cl.last_message_at', 'desc').orderBy('cl.conversation_id', 'desc').limit(n);
    return x.selectFrom(ordered.as(`b${i}`)).select(['id', 'at']);
  };
  const [head, ...rest] = f.labels.map(branch);
  const rows = await rest.reduce((q, b) => q.unionAll(b), head!).execute();
  const keys = new Map<string, [string, string]>();
  for (const r of rows) keys.set(r.id as string, [toIso(r.at as string | Date), r.id as string]);
  return [...keys.values()]
    .sort((a, b) => (a[0] < b[0] ? 1 : a[0] > b[0] ? -1 : a[1] < b[1] ? 1 : a[1] > b[1] ? -1 : 0))
    .slice(0, n);
}

/** The rows of these conversations, in the keys' order. */
async function rowsOf(x: Executor, keys: [string, string][]): Promise<ConversationListRow[]> {
  if (keys.length === 0) return [];
  const rows = await x
    .selectFrom('conversations as c')
    .innerJoin('guests as g', 'g.id', 'c.guest_id')
    .select(COLUMNS)
    .where(
      'c.id',
      'in',
      keys.map((k) => k[1]),
    )
    .execute();
  const byId = new Map(rows.map((r) => [r.id, r]));
  return keys.map((k) => byId.get(k[1])).filter((r) => r !== undefined) as ConversationListRow[];
}

/** The conversations carrying any of several labels, as every list answers a page or a cursor. */
async function anyLabelPages(x: Executor, f: LabelFilter, req: PageRequest): Promise<PageResult<ConversationListRow>> {
  if ('after' in req) {
    const keys = await firstKeys(x, f, req.limit + 1, req.after);
    const more = keys.length > req.limit;
    const rows = await rowsOf(x, keys.slice(0, req.limit));
    return { rows, total: null, next: more && rows.length > 0 ? keyOf(rows[rows.length - 1]!) : null };
  }
  const total = await anyLabelTotal(x, f);
  const offset = (req.page - 1) * req.limit;
  if (offset >= total) return { rows: [], total, next: null };
  const rows = await rowsOf(x, (await firstKeys(x, f, offset + req.limit, null)).slice(offset));
  const more = offset + rows.length < total && rows.length > 0;
  return { rows, total, next: more ? keyOf(rows[rows.length - 1]!) : null };
}

/** Conversations carrying any of `f.labels` (at least one), latest activity first. */
export function listLabelled(x: Executor, f: LabelFilter, req: PageRequest): Promise<PageResult<ConversationListRow>> {
  return f.labels.length === 1 ? labelPages(x, f, req) : anyLabelPages(x, f, req);
}
