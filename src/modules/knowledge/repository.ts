// Owns knowledge entry rows: reads (listed by title or ranked by search), writes, and the mapping
// of a row to its API shape.
import type { Static } from 'typebox';
import { type PageRequest, type PageResult, paginate } from '../../db/paginate.js';
import { nowIso, toIso } from '../../db/store.js';
import type { Executor, KnowledgeRow } from '../../db/types.js';
import { newId } from '../../lib/ids.js';
import type { KnowledgeEntry } from './schemas.js';
import { searchHits, searchTokens } from './search.js';

export type EntryView = Static<typeof KnowledgeEntry>;

const COLUMNS = ['id', 'title', 'content', 'category', 'created_at', 'updated_at'] as const;

export function toEntry(row: KnowledgeRow): EntryView {
  return {
    id: row.id,
    title: row.title,
    content: row.content,
    category: row.category,
    createdAt: toIso(row.created_at),
    updatedAt: toIso(row.updated_at),
  };
}

export async function findEntry(db: Executor, id: string): Promise<EntryView | undefined> {
  const row = await db.selectFrom('knowledge_entries').select(COLUMNS).where('id', '=', id).executeTakeFirst();
  return row && toEntry(row);
}

export interface EntryFilter {
  category?: string;
  /** Full-text search; without it entries are listed by title. */
  search?: string;
}

/** Entries by title, then id. */
export const byTitle = paginate<EntryFilter, KnowledgeRow>({
  name: 'knowledge',
  from: (db) => db.selectFrom('knowledge_entries'),
  where: (q, f, p) => (f.category === undefined ? q : q.where('category', '=', p('category'))),
  columns: (q) => q.select(COLUMNS),
  order: ['title', 'id'],
  direction: 'asc',
  keyOf: (row) => [row.title, row.id],
  count: (x, f, p) => {
    const q = x.selectFrom('knowledge_entries').select((eb) => eb.fn.countAll<number>().as('n'));
    return f.category === undefined ? q : q.where('category', '=', p('category'));
  },
  shapeOf: (f) => String(f.category !== undefined),
  values: (f) => ({ category: f.category }),
});

type Search = EntryFilter & { tokens: string[] };

/** Entries matching every token of a search, best match first: ranked, so numbered pages only. */
export const bestFirst = paginate<Search, KnowledgeRow>({
  name: 'knowledge-search',
  from: (db, f) => db.selectFrom(searchHits(db.dialect, f.tokens)),
  where: (q, f, p) => (f.category === undefined ? q : q.where('category', '=', p('category'))),
  columns: (q) => q.select(COLUMNS),
  order: ['rank', 'id'],
  direction: 'asc',
  keyOf: (row) => [row.title, row.id],
  count: (x, f, p) => {
    const q = x.selectFrom(searchHits(x.dialect, f.tokens)).select((eb) => eb.fn.countAll<number>().as('n'));
    return f.category === undefined ? q : q.where('category', '=', p('category'));
  },
  // The tokens are written into the statement: compiled for each search.
  shapeOf: () => null,
  values: (f) => ({ category: f.category }),
  ranked: true,
});

export async function listEntries(x: Executor, f: EntryFilter, req: PageRequest): Promise<PageResult<KnowledgeRow>> {
  if (f.search === undefined) return byTitle(x, f, req);
  const tokens = searchTokens(f.search);
  if (tokens.length === 0) return { rows: [], total: 0, next: null };
  return bestFirst(x, { ...f, tokens }, req);
}

export interface EntryInput {
  title: string;
  content: string;
  category: string;
}

export async function insertEntry(db: Executor, input: EntryInput): Promise<EntryView> {
  const now = nowIso();
  const row = { id: newId('kb'), ...input, created_at: now, updated_at: now };
  await db.insertInto('knowledge_entries').values(row).execute();
  return toEntry(row);
}

/** Replaces title and content, and category when given; undefined when the entry does not exist. */
export async function replaceEntry(
  db: Executor,
  id: string,
  input: Omit<EntryInput, 'category'> & { category?: string },
): Promise<EntryView | undefined> {
  const row = await db
    .updateTable('knowledge_entries')
    .set({
      title: input.title,
      content: input.content,
      ...(input.category !== undefined && { category: input.category }),
      updated_at: nowIso(),
    })
    .where('id', '=', id)
    .returning(COLUMNS)
    .executeTakeFirst();
  return row && toEntry(row);
}

/** True when an entry was deleted; its full-text index row goes with it (triggers or the column). */
export async function deleteEntry(db: Executor, id: string): Promise<boolean> {
  const r = await db.deleteFrom('knowledge_entries').where('id', '=', id).executeTakeFirst();
  return Number(r.numDeletedRows) > 0;
}
