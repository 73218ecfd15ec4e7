// Owns knowledge entry rows: reads (listed by title or ranked by search), writes, and the mapping
// of a row to its API shape.
import type { Static } from 'typebox';
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

export async function listEntries(
  db: Executor,
  f: EntryFilter,
  page: number,
  limit: number,
): Promise<{ items: EntryView[]; total: number }> {
  const offset = (page - 1) * limit;
  if (f.search === undefined) {
    let q = db.selectFrom('knowledge_entries');
    if (f.category !== undefined) q = q.where('category', '=', f.category);
    const [rows, count] = await Promise.all([
      q.select(COLUMNS).orderBy('title').orderBy('id').limit(limit).offset(offset).execute(),
      q.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow(),
    ]);
    return { items: rows.map(toEntry), total: Number(count.n) };
  }
  const tokens = searchTokens(f.search);
  if (tokens.length === 0) return { items: [], total: 0 };
  let q = db.selectFrom(searchHits(db.dialect, tokens));
  if (f.category !== undefined) q = q.where('category', '=', f.category);
  const [rows, count] = await Promise.all([
    q.select(COLUMNS).orderBy('rank').orderBy('id').limit(limit).offset(offset).execute(),
    q.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow(),
  ]);
  return { items: rows.map(toEntry), total: Number(count.n) };
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
