// Owns guest rows and their guest_tags index rows: reads, writes, the conflict lookup for the
// unique e-mail and phone, and the mapping of a row to its API shape.
import { type SelectQueryBuilder, sql } from 'kysely';
import type { Static } from 'typebox';
import { type ListParam, type PageRequest, type PageResult, paginate } from '../../db/paginate.js';
import { type Param, prepared } from '../../db/prepared.js';
import { fromJson, likeContains, nowIso, toIso, toJson } from '../../db/store.js';
import type { Database, Executor, GuestRow } from '../../db/types.js';
import { newId } from '../../lib/ids.js';
import type { Guest } from './schemas.js';

export type GuestView = Static<typeof Guest>;

const COLUMNS = ['id', 'name', 'email', 'phone', 'tags', 'notes', 'created_at', 'updated_at'] as const;
type GuestListRow = Pick<GuestRow, (typeof COLUMNS)[number]>;

export function toGuest(row: GuestListRow): GuestView {
  return {
    id: row.id,
    name: row.name,
    email: row.email,
    phone: row.phone,
    tags: fromJson<string[]>(row.tags),
    notes: row.notes,
    createdAt: toIso(row.created_at),
    updatedAt: toIso(row.updated_at),
  };
}

/** Tags are a set, but clients see the order they gave, so keep each tag's first occurrence. */
export const uniqueTags = (tags: readonly string[]): string[] => [...new Set(tags)];

/** What `search` matches against; must be rewritten whenever name, email or phone changes. */
const searchText = (name: string, email: string | null, phone: string | null): string =>
  [name, email, phone]
    .filter((s) => s !== null)
    .join(' ')
    .toLowerCase();

export async function findGuest(db: Executor, id: string): Promise<GuestView | undefined> {
  const row = await db.selectFrom('guests').select(COLUMNS).where('id', '=', id).executeTakeFirst();
  return row && toGuest(row);
}

/** Whether the guest is linked to a conversation or task assigned to the staff member. */
export async function isGuestOfStaff(db: Executor, guestId: string, staffId: string): Promise<boolean> {
  const row = await db
    .selectFrom('staff_guests')
    .select('refs')
    .where('staff_id', '=', staffId)
    .where('guest_id', '=', guestId)
    .executeTakeFirst();
  return row !== undefined;
}

export interface GuestFilter {
  search?: string;
  tag?: string;
  /** Restricts the list to guests of this staff member's conversations and tasks. */
  assignee?: string;
}

/**
 * A search term the trigram index serves (migration 004), lower-cased, or null. On SQLite the
 * index is an FTS5 table, which can use it for LIKE only without an ESCAPE clause: a term holding
 * LIKE's own wildcards (% _ \\), or one shorter than a trigram, is matched by reading the guests
 * instead. On PostgreSQL pg_trgm serves the escaped LIKE as is, so there is nothing to choose.
 */
function sqliteIndexedTerm(db: Executor, term: string): string | null {
  if (db.dialect === 'postgres') return null;
  const lower = term.toLowerCase();
  return [...lower].length >= 3 && !/[%_\\]/.test(lower) ? lower : null;
}

/**
 * Past this many matches a term is common, and its page is found sooner by reading guests newest
 * first until the page is full (a term in 2 % of guests fills 20 rows after ~1,000) than by
 * sorting every match the index yields (thousands of them at a few hundred thousand guests).
 */
export const COMMON_MATCHES = 1000;

/** How a search is matched: reading the guests one by one, or through the trigram index. */
export type SearchMode =
  /** `indexed`: the term's trigram-index pattern, when it has one (a common term): the count uses it. */
  { by: 'scan'; pattern: string; indexed?: string } | { by: 'index'; pattern: string } | null;

export interface GuestListFilter extends GuestFilter {
  mode: SearchMode;
  /**
   * SQLite, a common tag: read guests newest first and keep those with the tag, rather than
   * reading every tagged guest and sorting them (the planner's choice when left alone).
   */
  tagBy?: 'order';
}

/**
 * `q` narrowed by the filter's search and tag, each value a placeholder; `id` names the guest id
 * column of `q`'s table (guests' own, or staff_guests' copy of it).
 */
function narrowed(
  db: Pick<Executor, 'selectFrom'>,
  // biome-ignore lint/suspicious/noExplicitAny: guests or staff_guests, both carrying a guest id
  q: SelectQueryBuilder<Database, any, object>,
  id: 'guests.id' | 'sg.guest_id',
  f: GuestListFilter,
  p: ListParam,
) {
  if (f.mode?.by === 'scan') {
    q =
      id === 'guests.id'
        ? q.where(sql<boolean>`search_text like ${p('pattern')} escape '\\'`)
        : q.where(
            sql<boolean>`sg.guest_id in (select id from guests where search_text like ${p('pattern')} escape '\\')`,
          );
  }
  if (f.mode?.by === 'index') {
    q = q.where(
      sql<boolean>`${sql.ref(id)} in (select k.guest_id from guest_search s join guest_search_keys k on k.k = s.rowid where s.search_text like ${p('pattern')})`,
    );
  }
  if (f.tag !== undefined && f.tagBy === 'order') {
    // The unary plus keeps SQLite from driving the read from this term (its ids), so it reads the
    // ordering index and tests each guest against the tag's ids.
    q = q.where(sql<boolean>`+${sql.ref(id)} in (select guest_id from guest_tags where tag = ${p('tag')})`);
  } else if (f.tag !== undefined) {
    // IN, not a join: the (tag, guest_id) index yields the ids and each guest appears once.
    q = q.where(id, 'in', db.selectFrom('guest_tags').select('guest_tags.guest_id').where('tag', '=', p('tag')));
  }
  return q;
}

/** The guests holding a tag: its index range (a guest holds a tag once). */
const tagCount = (x: Pick<Executor, 'selectFrom'>, tag: unknown) =>
  x
    .selectFrom('guest_tags')
    .where('tag', '=', tag as string)
    .select((eb) => eb.fn.countAll<number>().as('n'));

/** The guests a trigram pattern matches, counted in the index alone (one row per guest, no join). */
const trigramCount = (x: Pick<Executor, 'selectFrom'>, pattern: unknown) =>
  x
    .selectFrom(sql<{ search_text: string }>`guest_search`.as('s'))
    .where(sql<boolean>`s.search_text like ${pattern}`)
    .select((eb) => eb.fn.countAll<number>().as('n'));

const indexedOf = (f: GuestListFilter) => (f.mode?.by === 'scan' ? f.mode.indexed : undefined);
const shapeOf = (f: GuestListFilter) =>
  `${f.mode?.by ?? 'all'},${indexedOf(f) !== undefined},${f.tag === undefined ? '' : (f.tagBy ?? 'ids')}`;
const values = (f: GuestListFilter) => ({
  pattern: f.mode?.pattern,
  indexed: indexedOf(f),
  tag: f.tag,
  assignee: f.assignee,
});
const keyOf = (row: GuestListRow): [string, string] => [toIso(row.created_at), row.id];

/** Every guest, newest first, prepared once per shape (search mode, tag). */
export const guestPages = paginate<GuestListFilter, GuestListRow>({
  name: 'guests',
  from: (db) => db.selectFrom('guests'),
  where: (q, f, p, db) => narrowed(db, q, 'guests.id', f, p),
  columns: (q) => q.select(COLUMNS),
  order: ['created_at', 'id'],
  direction: 'desc',
  keyOf,
  count(x, f, p) {
    // Unfiltered: guest_counts' single row (kept by triggers, migration 002). A search alone with
    // a trigram pattern (read through the index, or a common term read newest first): the index's
    // own count, one row per guest, no join, where reading every guest would be the alternative.
    if (f.mode === null && f.tag === undefined) return x.selectFrom('guest_counts').select('n').where('id', '=', 1);
    if (f.mode === null) return tagCount(x, p('tag'));
    const trigrams = f.mode?.by === 'index' ? p('pattern') : indexedOf(f) !== undefined ? p('indexed') : null;
    if (trigrams !== null && f.tag === undefined) return trigramCount(x, trigrams);
    return narrowed(x, x.selectFrom('guests'), 'guests.id', f, p).select((eb) => eb.fn.countAll<number>().as('n'));
  },
  shapeOf,
  values,
});

/**
 * A staff member's guests (those of their conversations and tasks), newest first: a range of
 * staff_guests' (staff_id, guest_created_at, guest_id) index (migration 011), so a page and a
 * deep page's skipped entries come from that index alone, and the guest rows are joined for the
 * page only.
 */
export const staffGuestPages = paginate<GuestListFilter, GuestListRow>({
  name: 'staff-guests',
  from: (db, _f, p) => db.selectFrom('staff_guests as sg').where('sg.staff_id', '=', p('assignee')),
  where: (q, f, p, db) => narrowed(db, q, 'sg.guest_id', f, p),
  columns: (q) => q.innerJoin('guests', 'guests.id', 'sg.guest_id').select(COLUMNS.map((c) => `guests.${c}` as const)),
  order: ['sg.guest_created_at', 'sg.guest_id'],
  direction: 'desc',
  keyOf,
  count(x, f, p) {
    // Unfiltered: the member's row of staff_guest_counts (kept by triggers, migration 011).
    if (f.mode === null && f.tag === undefined) {
      return x.selectFrom('staff_guest_counts').select('n').where('staff_id', '=', p('assignee'));
    }
    // A search alone: the index's matches, each looked up among the member's (a term matches far
    // fewer guests than a member has); CROSS JOIN keeps SQLite from reading the member's rows instead.
    if (f.mode?.by === 'index' && f.tag === undefined) {
      return x
        .selectFrom(
          sql<{
            n: number;
          }>`(select count(*) as n from guest_search s join guest_search_keys k on k.k = s.rowid cross join staff_guests sg where s.search_text like ${p('pattern')} and sg.staff_id = ${p('assignee')} and sg.guest_id = k.guest_id)`.as(
            'c',
          ),
        )
        .select('c.n');
    }
    return narrowed(
      x,
      x.selectFrom('staff_guests as sg').where('sg.staff_id', '=', p('assignee')),
      'sg.guest_id',
      f,
      p,
    ).select((eb) => eb.fn.countAll<number>().as('n'));
  },
  shapeOf,
  values,
});

export async function listGuests(x: Executor, f: GuestFilter, req: PageRequest): Promise<PageResult<GuestListRow>> {
  const pages = f.assignee === undefined ? guestPages : staffGuestPages;
  const search = f.search !== undefined && f.search !== '' ? f.search : undefined;
  if (search === undefined) {
    // A common tag alone on SQLite (its guests counted first: an index range) is read newest first.
    const common =
      f.tag !== undefined &&
      f.assignee === undefined &&
      x.dialect === 'sqlite' &&
      Number((await x.first(tagMatches, { tag: f.tag }))?.n ?? 0) > COMMON_MATCHES;
    return pages(x, { ...f, mode: null, ...(common && { tagBy: 'order' as const }) }, req);
  }
  const indexed = sqliteIndexedTerm(x, search);
  if (indexed === null) return pages(x, { ...f, mode: { by: 'scan', pattern: likeContains(search) } }, req);
  // A common term is found sooner by reading guests newest first than through the index; with a
  // tag or staff member narrowing the guests, the index always serves.
  const pattern = `%${indexed}%`;
  const alone = f.tag === undefined && f.assignee === undefined;
  const common = alone && Number((await x.first(indexMatches, { pattern }))?.n ?? 0) > COMMON_MATCHES;
  return pages(
    x,
    { ...f, mode: common ? { by: 'scan', pattern: likeContains(search), indexed: pattern } : { by: 'index', pattern } },
    req,
  );
}

const tagMatches = prepared((x, p: Param<{ tag: string }>) =>
  x
    .selectFrom('guest_tags')
    .where('tag', '=', p('tag'))
    .select((eb) => eb.fn.countAll<number>().as('n')),
);

const indexMatches = prepared((x, p: Param<{ pattern: string }>) =>
  x
    .selectFrom(sql<{ search_text: string }>`guest_search`.as('s'))
    .where(sql<boolean>`s.search_text like ${p('pattern')}`)
    .select((eb) => eb.fn.countAll<number>().as('n')),
);

export interface GuestConflict {
  field: 'email' | 'phone';
  message: string;
  existingId: string;
}

/** Other guests already holding this e-mail (any case) or phone; `exceptId` is the guest itself. */
export async function findConflicts(
  db: Executor,
  values: { email?: string | null; phone?: string | null },
  exceptId?: string,
): Promise<GuestConflict[]> {
  const emailLower = values.email?.toLowerCase() ?? null;
  const phone = values.phone ?? null;
  if (emailLower === null && phone === null) return [];
  let q = db
    .selectFrom('guests')
    .select(['id', 'email_lower', 'phone'])
    .where((eb) => {
      const ors = [];
      if (emailLower !== null) ors.push(eb('email_lower', '=', emailLower));
      if (phone !== null) ors.push(eb('phone', '=', phone));
      return eb.or(ors);
    });
  if (exceptId !== undefined) q = q.where('id', '!=', exceptId);
  const rows = await q.orderBy('id').execute();
  const out: GuestConflict[] = [];
  const email = rows.find((r) => emailLower !== null && r.email_lower === emailLower);
  if (email) out.push({ field: 'email', message: `is already used by guest ${email.id}`, existingId: email.id });
  const ph = rows.find((r) => phone !== null && r.phone === phone);
  if (ph) out.push({ field: 'phone', message: `is already used by guest ${ph.id}`, existingId: ph.id });
  return out;
}

async function writeTags(db: Executor, guestId: string, tags: string[]) {
  if (tags.length > 0) {
    await db
      .insertInto('guest_tags')
      .values(tags.map((tag) => ({ guest_id: guestId, tag })))
      .execute();
  }
}

export interface NewGuestInput {
  name: string;
  email?: string | null;
  phone?: string | null;
  tags?: string[];
  notes?: string | null;
}

export async function insertGuest(db: Executor, input: NewGuestInput): Promise<GuestView> {
  const now = nowIso();
  const email = input.email ?? null;
  const phone = input.phone ?? null;
  const tags = uniqueTags(input.tags ?? []);
  const row = {
    id: newId('gst'),
    name: input.name,
    email,
    email_lower: email?.toLowerCase() ?? null,
    phone,
    tags: toJson(tags),
    notes: input.notes ?? null,
    search_text: searchText(input.name, email, phone),
    created_at: now,
    updated_at: now,
  };
  await db.insertInto('guests').values(row).execute();
  await writeTags(db, row.id, tags);
  return toGuest(row);
}

export interface GuestChanges {
  name?: string;
  email?: string | null;
  phone?: string | null;
  tags?: string[];
  notes?: string | null;
}

/** Applies `c` to the guest as read in `current` (read it in the same transaction). */
export async function updateGuest(db: Executor, current: GuestView, c: GuestChanges): Promise<GuestView> {
  const name = c.name ?? current.name;
  const email = c.email !== undefined ? c.email : current.email;
  const phone = c.phone !== undefined ? c.phone : current.phone;
  const tags = c.tags !== undefined ? uniqueTags(c.tags) : undefined;
  await db
    .updateTable('guests')
    .set({
      name,
      email,
      email_lower: email?.toLowerCase() ?? null,
      phone,
      search_text: searchText(name, email, phone),
      ...(tags !== undefined && { tags: toJson(tags) }),
      ...(c.notes !== undefined && { notes: c.notes }),
      updated_at: nowIso(),
    })
    .where('id', '=', current.id)
    .execute();
  if (tags !== undefined) {
    await db.deleteFrom('guest_tags').where('guest_id', '=', current.id).execute();
    await writeTags(db, current.id, tags);
  }
  const updated = await findGuest(db, current.id);
  return updated!;
}
