// Owns canned response rows: reads (listed by shortcode or ranked by search), writes, the lookup
// of a taken shortcode, and the mapping of a row to its API shape.
import { type PageRequest, type PageResult, paginate } from '../../db/paginate.js';
import { nowIso, toIso } from '../../db/store.js';
import type { CannedResponseTable, Executor } from '../../db/types.js';
import { newId } from '../../lib/ids.js';
import { searchTokens } from '../knowledge/search.js';
import type { CannedChanges, CannedView, CreateCannedInput } from './schemas.js';
import { cannedHits } from './search.js';

type Row = { [K in keyof CannedResponseTable]: CannedResponseTable[K] };

const COLUMNS = ['id', 'shortcode', 'title', 'content', 'created_at', 'updated_at'] as const;

export function toCanned(row: Row): CannedView {
  return {
    id: row.id,
    shortcode: row.shortcode,
    title: row.title,
    content: row.content,
    createdAt: toIso(row.created_at),
    updatedAt: toIso(row.updated_at),
  };
}

export async function findCanned(db: Executor, id: string): Promise<CannedView | undefined> {
  const row = await db.selectFrom('canned_responses').select(COLUMNS).where('id', '=', id).executeTakeFirst();
  return row && toCanned(row);
}

/** The id of the canned response holding `shortcode`, other than `exceptId`. */
export async function shortcodeHolder(db: Executor, shortcode: string, exceptId?: string): Promise<string | undefined> {
  let q = db.selectFrom('canned_responses').select('id').where('shortcode', '=', shortcode);
  if (exceptId !== undefined) q = q.where('id', '!=', exceptId);
  return (await q.executeTakeFirst())?.id;
}

/** Canned responses by shortcode (its unique index), then id. */
export const byShortcode = paginate<Record<string, never>, Row>({
  name: 'canned-responses',
  from: (db) => db.selectFrom('canned_responses'),
  where: (q) => q,
  columns: (q) => q.select(COLUMNS),
  order: ['shortcode', 'id'],
  direction: 'asc',
  keyOf: (row) => [row.shortcode, row.id],
  count: (x) => x.selectFrom('canned_responses').select((eb) => eb.fn.countAll<number>().as('n')),
  shapeOf: () => '',
  values: () => ({}),
});

/** Canned responses matching every token, best first: ranked, so numbered pages only. */
export const cannedBestFirst = paginate<{ tokens: string[] }, Row>({
  name: 'canned-search',
  from: (db, f) => db.selectFrom(cannedHits(db.dialect, f.tokens)),
  where: (q) => q,
  columns: (q) => q.select(COLUMNS),
  order: ['rank', 'id'],
  direction: 'asc',
  keyOf: (row) => [row.shortcode, row.id],
  count: (x, f) => x.selectFrom(cannedHits(x.dialect, f.tokens)).select((eb) => eb.fn.countAll<number>().as('n')),
  // The tokens are written into the statement: compiled for each search.
  shapeOf: () => null,
  values: () => ({}),
  ranked: true,
});

export async function listCanned(x: Executor, search: string | undefined, req: PageRequest): Promise<PageResult<Row>> {
  if (search === undefined) return byShortcode(x, {}, req);
  const tokens = searchTokens(search);
  if (tokens.length === 0) return { rows: [], total: 0, next: null };
  return cannedBestFirst(x, { tokens }, req);
}

export async function insertCanned(db: Executor, input: CreateCannedInput): Promise<CannedView> {
  const now = nowIso();
  const row = { id: newId('cr'), ...input, created_at: now, updated_at: now };
  await db.insertInto('canned_responses').values(row).execute();
  return toCanned(row);
}

/** Applies the changes; undefined when there is no such canned response. */
export async function updateCanned(db: Executor, id: string, c: CannedChanges): Promise<CannedView | undefined> {
  const row = await db
    .updateTable('canned_responses')
    .set({ ...c, updated_at: nowIso() })
    .where('id', '=', id)
    .returning(COLUMNS)
    .executeTakeFirst();
  return row && toCanned(row);
}

export async function deleteCanned(db: Executor, id: string): Promise<boolean> {
  const r = await db.deleteFrom('canned_responses').where('id', '=', id).executeTakeFirst();
  return Number(r.numDeletedRows) > 0;
}
