// Owns guest rows and their guest_tags index rows: reads, writes, the conflict lookup for the
// unique e-mail and phone, and the mapping of a row to its API shape.
import { type SelectQueryBuilder, sql } from 'kysely';
import type { Static } from 'typebox';
import { type ListParam, type PageRequest, type PageResult, paginate } from '../../db/paginate.js';
import { type Param, prepared, updateById } from '../../db/prepared.js';
import { fromJson, likeContains, nowIso, toIso, toJson } from '../../db/store.js';
import type { Database, Executor, GuestRow } from '../../db/types.js';
import { newId } from '../../lib/ids.js';
import { currentStay } from '../stays/current.js';
import type { StaySummaryView } from '../stays/schemas.js';
import type { Guest } from './schemas.js';

export type GuestView = Static<typeof Guest>;

const COLUMNS = [
  'id',
  'name',
  'email',
  'phone',
  'tags',
  'notes',
  'external_ref',
  'attributes',
  'created_at',
  'updated_at',
] as const;
/** A guest row as lists read it; `stay` is added for the page (`withStays`), never per row. */
export type GuestListRow = Pick<GuestRow, (typeof COLUMNS)[number]> & { stay?: StaySummaryView };

export type Attributes = Record<string, string | number | boolean>;

export function toGuest(row: GuestListRow): GuestView {
  return {
    id: row.id,
    name: row.name,
    email: row.email,
    phone: row.phone,
    tags: fromJson<string[]>(row.tags),
    notes: row.notes,
    externalRef: row.external_ref ?? null,
    attributes: fromJson<Attributes>(row.attributes ?? '{}'),
    stay: row.stay ?? null,
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

// Prepared: every read and write of one guest runs it, a PATCH twice.
const guestById = prepared((db, p: Param<{ id: string }>) =>
  db.selectFrom('guests').select(COLUMNS).where('id', '=', p('id')),
);

/**
 * The guest as the API shows it. `stay`: its current stay when the caller already holds it (read
 * in the same transaction, which wrote no stay since), instead of reading it again.
 */
export async function findGuest(db: Executor, id: string, stay?: StaySummaryView): Promise<GuestView | undefined> {
  const row = await db.first(guestById, { id });
  return row && toGuest({ ...row, stay: stay !== undefined ? stay : await currentStay(db, id) });
}

/** The guest with this externalRef, if any. */
export async function findGuestByRef(db: Executor, ref: string): Promise<GuestView | undefined> {
  const row = await db.selectFrom('guests').select('id').where('external_ref', '=', ref).executeTakeFirst();
  return row && findGuest(db, row.id);
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
  /** Exact look-ups (docs/stays.md): e-mail any case, phone, externalRef; each a unique index. */
  email?: string;
  phone?: string;
  externalRef?: string;
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

/** A match read through the trigram index costs about as much as this many guests read in order. */
const MATCH_COST = 10;

/** How a search is matched: reading the guests one by one, or through the trigram index. */
export type SearchMode =
  /** `indexed`: the term's trigram-index pattern, when it has one (a common term): the count uses it. */
  { by: 'scan'; pattern: string; indexed?: string } | { by: 'index'; pattern: string } | null;

export interface GuestListFilter extends GuestFilter {
  mode: SearchMode;
}

/** The guest id column of a list's table: guests' own, or the copy in staff_guests or guest_tags. */
type GuestIdColumn = 'guests.id' | 'sg.guest_id' | 'gt.guest_id';

/** `q` narrowed by the filter's search, its value a placeholder; `id` names `q`'s guest id column. */
function searched(
  // biome-ignore lint/suspicious/noExplicitAny: guests, staff_guests or guest_tags, each with a guest id
  q: SelectQueryBuilder<Database, any, object>,
  id: GuestIdColumn,
  f: GuestListFilter,
  p: ListParam,
) {
  if (f.mode?.by === 'scan') {
    return id === 'guests.id'
      ? q.where(sql<boolean>`search_text like ${p('pattern')} escape '\\'`)
      : q.where(
          sql<boolean>`${sql.ref(id)} in (select id from guests where search_text like ${p('pattern')} escape '\\')`,
        );
  }
  if (f.mode?.by === 'index') {
    return q.where(
      sql<boolean>`${sql.ref(id)} in (select k.guest_id from guest_search s join guest_search_keys k on k.k = s.rowid where s.search_text like ${p('pattern')})`,
    );
  }
  return q;
}

/** Every guest: the sum of guest_counts' rows (one on SQLite, a few slots on PostgreSQL). */
const guestTotal = (x: Pick<Executor, 'selectFrom'>) =>
  x.selectFrom('guest_counts').select((eb) => eb.fn.coalesce(eb.fn.sum<number>('n'), eb.lit(0)).as('n'));

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
  `${f.mode?.by ?? 'all'},${indexedOf(f) !== undefined},${f.assignee === undefined ? '' : 'staff'}`;
const values = (f: GuestListFilter) => ({
  pattern: f.mode?.pattern,
  indexed: indexedOf(f),
  tag: f.tag,
  assignee: f.assignee,
});
const keyOf = (row: GuestListRow): [string, string] => [toIso(row.created_at), row.id];
const guestColumns = (id: GuestIdColumn) => (q: SelectQueryBuilder<Database, never, object>) =>
  q.innerJoin('guests', 'guests.id', id as never).select(COLUMNS.map((c) => `guests.${c}` as const));

/** Every guest (a manager's list), newest first, prepared once per search mode. */
export const guestPages = paginate<GuestListFilter, GuestListRow>({
  name: 'guests',
  from: (db) => db.selectFrom('guests'),
  where: (q, f, p) => searched(q, 'guests.id', f, p),
  columns: (q) => q.select(COLUMNS),
  order: ['created_at', 'id'],
  direction: 'desc',
  keyOf,
  count(x, f, p) {
    // Unfiltered: guest_counts' rows (kept by triggers, migrations 002 and 013). A search with a
    // trigram pattern (read through the index, or a common term read newest first): the index's
    // own count, one row per guest, no join, where reading every guest would be the alternative.
    if (f.mode === null) return guestTotal(x);
    const trigrams = f.mode.by === 'index' ? p('pattern') : indexedOf(f) !== undefined ? p('indexed') : null;
    if (trigrams !== null) return trigramCount(x, trigrams);
    return searched(x.selectFrom('guests'), 'guests.id', f, p).select((eb) => eb.fn.countAll<number>().as('n'));
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
  where: (q, f, p) => searched(q, 'sg.guest_id', f, p),
  columns: guestColumns('sg.guest_id') as never,
  order: ['sg.guest_created_at', 'sg.guest_id'],
  direction: 'desc',
  keyOf,
  count(x, f, p) {
    // Unfiltered: the member's rows of staff_guest_counts (kept by triggers, migrations 011, 013).
    if (f.mode === null) {
      return x
        .selectFrom('staff_guest_counts')
        .where('staff_id', '=', p('assignee'))
        .select((eb) => eb.fn.coalesce(eb.fn.sum<number>('n'), eb.lit(0)).as('n'));
    }
    return searched(
      x.selectFrom('staff_guests as sg').where('sg.staff_id', '=', p('assignee')),
      'sg.guest_id',
      f,
      p,
    ).select((eb) => eb.fn.countAll<number>().as('n'));
  },
  shapeOf,
  values,
});

/**
 * A staff member's guests matching a search through the trigram index (SQLite), newest first: the
 * matches, each looked up among the member's guests with its created_at, are worked out once per
 * statement (`list_base`), so the page is sorted from them and counted from them, and guest rows
 * are read for the page alone.
 */
export const staffSearchPages = paginate<GuestListFilter, GuestListRow>({
  name: 'staff-search',
  base: (_f, p) =>
    sql<{
      guest_id: string;
      guest_created_at: string;
    }>`(select sg.guest_id, sg.guest_created_at from guest_search s join guest_search_keys k on k.k = s.rowid cross join staff_guests sg where s.search_text like ${p('pattern')} and sg.staff_id = ${p('assignee')} and sg.guest_id = k.guest_id)`,
  from: (db) => db.selectFrom(sql<{ guest_id: string; guest_created_at: string }>`list_base`.as('sg')),
  where: (q) => q,
  columns: guestColumns('sg.guest_id') as never,
  order: ['sg.guest_created_at', 'sg.guest_id'],
  direction: 'desc',
  keyOf,
  count: (x) =>
    x.selectFrom(sql<{ guest_id: string }>`list_base`.as('b')).select((eb) => eb.fn.countAll<number>().as('n')),
  shapeOf: () => 'index',
  values,
});

/**
 * The guests holding a tag, newest first, of every guest or of a staff member's: a range of
 * guest_tags' (tag, guest_created_at, guest_id) index (migration 012), each entry looked up among
 * the member's guests when a member asks, so a page at any depth reads that range up to its
 * offset and the guest rows of the page alone.
 */
export const tagGuestPages = paginate<GuestListFilter, GuestListRow>({
  name: 'tag-guests',
  from: (db, _f, p) => db.selectFrom('guest_tags as gt').where('gt.tag', '=', p('tag')),
  where: (q, f, p) => ofMember(searched(q, 'gt.guest_id', f, p), 'gt.guest_id', f, p),
  columns: guestColumns('gt.guest_id') as never,
  order: ['gt.guest_created_at', 'gt.guest_id'],
  direction: 'desc',
  keyOf,
  count(x, f, p) {
    if (f.mode === null && f.assignee === undefined) return tagCount(x, p('tag'));
    // A member's tag: the member's rows of staff_tag_counts (kept by triggers, migration 014).
    if (f.mode === null) {
      return x
        .selectFrom('staff_tag_counts')
        .where('staff_id', '=', p('assignee'))
        .where('tag', '=', p('tag'))
        .select((eb) => eb.fn.coalesce(eb.fn.sum<number>('n'), eb.lit(0)).as('n'));
    }
    const tagged = x.selectFrom('guest_tags as gt').where('gt.tag', '=', p('tag'));
    return ofMember(searched(tagged, 'gt.guest_id', f, p), 'gt.guest_id', f, p).select((eb) =>
      eb.fn.countAll<number>().as('n'),
    );
  },
  shapeOf,
  values,
});

/** `q`'s guests kept to the member's, when a member asks: a key lookup in staff_guests per guest. */
function ofMember(
  // biome-ignore lint/suspicious/noExplicitAny: guest_tags, as the tag list names it
  q: SelectQueryBuilder<Database, any, object>,
  id: GuestIdColumn,
  f: GuestListFilter,
  p: ListParam,
) {
  if (f.assignee === undefined) return q;
  return q.where(
    sql<boolean>`exists (select 1 from staff_guests sg where sg.staff_id = ${p('assignee')} and sg.guest_id = ${sql.ref(id)})`,
  );
}

const LOOKUP_KEYS = ['email', 'phone', 'externalRef', 'tag', 'assignee', 'pattern'] as const;
type LookupFilter = Partial<Record<(typeof LOOKUP_KEYS)[number], string>>;

/**
 * Guests found by an exact e-mail (any case), phone or externalRef, each a unique index (so a
 * page holds at most one guest), then narrowed by any other filter given with it.
 */
function lookupWhere(
  // biome-ignore lint/suspicious/noExplicitAny: the guests table, as the list primitive composes it
  q: SelectQueryBuilder<Database, any, object>,
  f: LookupFilter,
  p: ListParam,
) {
  if (f.email !== undefined) q = q.where('email_lower', '=', p('email'));
  if (f.phone !== undefined) q = q.where('phone', '=', p('phone'));
  if (f.externalRef !== undefined) q = q.where('external_ref', '=', p('externalRef'));
  if (f.tag !== undefined) {
    q = q.where(
      sql<boolean>`exists (select 1 from guest_tags gt where gt.guest_id = guests.id and gt.tag = ${p('tag')})`,
    );
  }
  if (f.pattern !== undefined) q = q.where(sql<boolean>`search_text like ${p('pattern')} escape '\\'`);
  if (f.assignee !== undefined) {
    q = q.where(
      sql<boolean>`exists (select 1 from staff_guests sg where sg.staff_id = ${p('assignee')} and sg.guest_id = guests.id)`,
    );
  }
  return q;
}

export const lookupPages = paginate<LookupFilter, GuestListRow>({
  name: 'guest-lookup',
  from: (db) => db.selectFrom('guests'),
  where: (q, f, p) => lookupWhere(q, f, p),
  columns: (q) => q.select(COLUMNS),
  order: ['created_at', 'id'],
  direction: 'desc',
  keyOf,
  count: (x, f, p) => lookupWhere(x.selectFrom('guests'), f, p).select((eb) => eb.fn.countAll<number>().as('n')),
  shapeOf: (f) => LOOKUP_KEYS.map((k) => (f[k] === undefined ? '-' : k)).join(','),
  values: (f) => ({ ...f, email: f.email?.toLowerCase() }),
});

export async function listGuests(x: Executor, f: GuestFilter, req: PageRequest): Promise<PageResult<GuestListRow>> {
  if (f.email !== undefined || f.phone !== undefined || f.externalRef !== undefined) {
    const search = f.search !== undefined && f.search !== '' ? likeContains(f.search) : undefined;
    return lookupPages(
      x,
      { email: f.email, phone: f.phone, externalRef: f.externalRef, tag: f.tag, assignee: f.assignee, pattern: search },
      req,
    );
  }
  const search = f.search !== undefined && f.search !== '' ? f.search : undefined;
  const indexed = search === undefined ? null : sqliteIndexedTerm(x, search);
  // A tag's guests are its index range; a member's, theirs; a search through the trigram index
  // yields few enough guests to look each up (among the member's, when a member asks).
  const pages =
    f.tag !== undefined
      ? tagGuestPages
      : f.assignee === undefined
        ? guestPages
        : search !== undefined && indexed !== null
          ? staffSearchPages
          : staffGuestPages;
  if (search === undefined) return pages(x, { ...f, mode: null }, req);
  if (indexed === null) return pages(x, { ...f, mode: { by: 'scan', pattern: likeContains(search) } }, req);
  const pattern = `%${indexed}%`;
  const scan = f.tag === undefined && f.assignee === undefined && (await readNewestFirst(x, pattern, req));
  return pages(
    x,
    { ...f, mode: scan ? { by: 'scan', pattern: likeContains(search), indexed: pattern } : { by: 'index', pattern } },
    req,
  );
}

/**
 * Whether a term's page is found sooner by reading guests newest first (testing each) than
 * through the trigram index (every match looked up, read and sorted): when the guests read to fill
 * the page, at the term's share of all guests, are fewer than MATCH_COST times its matches. A
 * common term's first pages read newest first; its deep pages, and a rare term's, through the
 * index. A cursor page reads from the cursor on, as a first page does.
 */
async function readNewestFirst(x: Executor, pattern: string, req: PageRequest): Promise<boolean> {
  const c = await x.first(termShare, { pattern });
  const matches = Number(c?.matches ?? 0);
  if (matches <= COMMON_MATCHES) return false;
  const reach = ('page' in req ? (req.page - 1) * req.limit : 0) + req.limit;
  return (reach * Number(c?.guests ?? 0)) / matches < MATCH_COST * matches;
}

const termShare = prepared((x, p: Param<{ pattern: string }>) =>
  trigramCount(x, p('pattern'))
    .clearSelect()
    .select((eb) => [eb.fn.countAll<number>().as('matches'), guestTotal(x).as('guests')]),
);

export interface GuestConflict {
  field: 'email' | 'phone' | 'externalRef';
  message: string;
  existingId: string;
}

/** Other guests already holding this e-mail (any case) or phone; `exceptId` is the guest itself. */
export async function findConflicts(
  db: Executor,
  values: { email?: string | null; phone?: string | null; externalRef?: string | null },
  exceptId?: string,
): Promise<GuestConflict[]> {
  const emailLower = values.email?.toLowerCase() ?? null;
  const phone = values.phone ?? null;
  const ref = values.externalRef ?? null;
  if (emailLower === null && phone === null && ref === null) return [];
  let q = db
    .selectFrom('guests')
    .select(['id', 'email_lower', 'phone', 'external_ref'])
    .where((eb) => {
      const ors = [];
      if (emailLower !== null) ors.push(eb('email_lower', '=', emailLower));
      if (phone !== null) ors.push(eb('phone', '=', phone));
      if (ref !== null) ors.push(eb('external_ref', '=', ref));
      return eb.or(ors);
    });
  if (exceptId !== undefined) q = q.where('id', '!=', exceptId);
  const rows = await q.orderBy('id').execute();
  const out: GuestConflict[] = [];
  const email = rows.find((r) => emailLower !== null && r.email_lower === emailLower);
  if (email) out.push({ field: 'email', message: `is already used by guest ${email.id}`, existingId: email.id });
  const ph = rows.find((r) => phone !== null && r.phone === phone);
  if (ph) out.push({ field: 'phone', message: `is already used by guest ${ph.id}`, existingId: ph.id });
  const r = rows.find((x) => ref !== null && x.external_ref === ref);
  if (r) out.push({ field: 'externalRef', message: `is already used by guest ${r.id}`, existingId: r.id });
  return out;
}

/** The guest's tag rows, each with the guest's created_at as stored (its tag's list order). */
async function writeTags(db: Executor, guestId: string, tags: string[]) {
  if (tags.length > 0) {
    const createdAt = db.selectFrom('guests').select('created_at').where('id', '=', guestId);
    await db
      .insertInto('guest_tags')
      .values(tags.map((tag) => ({ guest_id: guestId, tag, guest_created_at: createdAt })))
      .execute();
  }
}

export interface NewGuestInput {
  name: string;
  email?: string | null;
  phone?: string | null;
  tags?: string[];
  notes?: string | null;
  externalRef?: string | null;
  attributes?: Attributes;
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
    external_ref: input.externalRef ?? null,
    attributes: toJson(input.attributes ?? {}),
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
  externalRef?: string | null;
  /** The whole set after the change (the service merges). */
  attributes?: Attributes;
}

/** Applies `c` to the guest as read in `current` (read it in the same transaction). */
export async function updateGuest(db: Executor, current: GuestView, c: GuestChanges): Promise<GuestView> {
  const name = c.name ?? current.name;
  const email = c.email !== undefined ? c.email : current.email;
  const phone = c.phone !== undefined ? c.phone : current.phone;
  const tags = c.tags !== undefined ? uniqueTags(c.tags) : undefined;
  await updateById(db, 'guests', current.id, {
    name,
    email,
    email_lower: email?.toLowerCase() ?? null,
    phone,
    search_text: searchText(name, email, phone),
    ...(tags !== undefined && { tags: toJson(tags) }),
    ...(c.notes !== undefined && { notes: c.notes }),
    ...(c.externalRef !== undefined && { external_ref: c.externalRef }),
    ...(c.attributes !== undefined && { attributes: toJson(c.attributes) }),
    updated_at: nowIso(),
  });
  if (tags !== undefined) {
    await db.deleteFrom('guest_tags').where('guest_id', '=', current.id).execute();
    await writeTags(db, current.id, tags);
  }
  // A guest's own fields change no stay: its current stay is the one just read with it.
  const updated = await findGuest(db, current.id, current.stay);
  return updated!;
}
