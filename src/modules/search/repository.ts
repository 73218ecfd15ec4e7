// Owns the message search query (docs/search.md): the newest matching messages (at most WINDOW),
// narrowed by channel, time and a staff member's own conversations, ranked best first, a page of
// them and their number, in one statement per store. Ranking only the newest WINDOW matches keeps a
// search's cost bounded by WINDOW rather than by how common its words are: a word in one message in
// thirty has 170,000 matches at 5M messages, each one ranked costing about a microsecond (and a row
// read when a filter needs its conversation), where the newest thousand are found in a few ms.
import { CompiledQuery } from 'kysely';
import { PLAN_WITH_VALUES } from '../../db/store.js';
import type { Executor } from '../../db/types.js';
import { MESSAGE_COLUMNS, toMessage } from '../conversations/messages-repository.js';
import type { MessageView } from '../conversations/schemas.js';
import { ftsMatch, tsQuery } from './words.js';

export interface SearchFilter {
  words: readonly string[];
  channel?: string;
  /** ISO 8601; messages created at or after it. */
  from?: string;
  /** ISO 8601; messages created before it. */
  to?: string;
  /** A staff-role caller's id: only messages of conversations assigned to them. */
  onlyAssignee?: string;
}

/** The newest matching messages a search ranks and counts; older ones beyond them are not found. */
export const WINDOW = 1000;

export interface SearchPage {
  rows: MessageView[];
  /** Matches ranked (at most WINDOW). */
  total: number;
  /** More messages match than WINDOW: the oldest of them were left out. */
  capped: boolean;
}

// The columns every message read selects: a new column reaches search hits with the rest.
const SELECTED = MESSAGE_COLUMNS.map((c) => `m.${c}`).join(', ');

type Row = Parameters<typeof toMessage>[0] & { total: number | string; matched: number | string };

/** The filter's time conditions on messages `m`, with their values in order. */
function timeConditions(f: SearchFilter, param: (v: unknown, cast?: string) => string): string[] {
  const out: string[] = [];
  if (f.from !== undefined) out.push(`m.created_at >= ${param(f.from, 'timestamptz')}`);
  if (f.to !== undefined) out.push(`m.created_at < ${param(f.to, 'timestamptz')}`);
  return out;
}

/** The page of matches `offset` rows in, `limit` long, and the number of all matches. */
export async function searchMessages(
  x: Executor,
  f: SearchFilter,
  page: { limit: number; offset: number },
): Promise<SearchPage> {
  const values: unknown[] = [];
  const pg = x.dialect === 'postgres';
  const param = (v: unknown, cast?: string) => {
    values.push(v);
    return pg ? `$${values.length}${cast === undefined ? '' : `::${cast}`}` : '?';
  };
  const text = pg ? postgresSql(f, param, page) : sqliteSql(f, param, page);
  const { rows } = await x.executeQuery<Row>(CompiledQuery.raw(text, values));
  const total = Number(rows[0]?.total ?? 0);
  const capped = Number(rows[0]?.matched ?? 0) > WINDOW;
  return { rows: rows.filter((r) => r.id !== null).map(toMessage), total, capped };
}

type ParamFn = (v: unknown, cast?: string) => string;

/**
 * FTS5 drives (CROSS JOIN keeps it the outer loop), newest first (its own rowid order, so the scan
 * stops at the window). The assignee and channel are words of the index's `scope` column
 * (migration 034), matched with the search's words inside the index; messages are read for each
 * match scanned only for a time filter, otherwise just for the page. bm25 weighs the content
 * column alone and is lower for a better match; ties go to the newer message (the higher rowid).
 *
 * bm25 counts, once per search, the rows holding each phrase of the MATCH (its rarity), reading
 * every match of it: for a scope word that is a quarter of all messages (a channel) or all of a
 * staff member's. A narrowed search therefore finds its window without bm25, then ranks the
 * window's rows by a second MATCH of the content words alone over the window's span of rowids:
 * the same rank (a scope word weighs 0 and its rarity multiplies nothing), without reading the
 * scope word's matches.
 */
function sqliteSql(f: SearchFilter, param: ParamFn, page: { limit: number; offset: number }): string {
  const narrowed = f.onlyAssignee !== undefined || f.channel !== undefined;
  const match = param(ftsMatch(f.words, { assignee: f.onlyAssignee, channel: f.channel }));
  const where = timeConditions(f, param);
  const joins = where.length === 0 ? '' : 'cross join messages m on m.rowid = f.rowid';
  const found = `from message_fts f ${joins}
  where message_fts match ${match}${where.map((w) => ` and ${w}`).join('')}
  order by f.rowid desc limit ${WINDOW + 1}`;
  // An empty window spans nothing: the largest rowid keeps the second MATCH from reading anything.
  const windows = narrowed
    ? `with win as materialized (select f.rowid as r ${found}),
ids as materialized (select r from win order by r desc limit ${WINDOW}),
ranked as materialized (
  select f.rowid as r, bm25(message_fts, 1.0, 0.0) as rank from message_fts f
  where message_fts match ${param(ftsMatch(f.words))}
    and f.rowid >= coalesce((select min(r) from ids), 9223372036854775807)
), hits as materialized (select i.r, k.rank from ids i join ranked k on k.r = i.r)`
    : `with win as materialized (select f.rowid as r, bm25(message_fts, 1.0, 0.0) as rank ${found}),
hits as materialized (select r, rank from win order by r desc limit ${WINDOW})`;
  const limit = param(page.limit);
  const offset = param(page.offset);
  return `${windows}
select (select count(*) from win) as matched, t.n as total, ${SELECTED}
from (select count(*) as n from hits) t
left join (select r, rank from hits order by rank, r desc limit ${limit} offset ${offset}) h on 1
left join messages m on m.rowid = h.r
order by h.rank, h.r desc`;
}

/**
 * The newest matches by id (time-ordered): the planner reads the GIN index and sorts the matches
 * when they are few, or walks the primary key backwards testing each row when they are many.
 * ts_rank (normalised by the log of the message's length, as bm25 weighs length) is computed for
 * the window alone and is higher for a better match; ties go to the newer message (the higher id).
 */
function postgresSql(f: SearchFilter, param: ParamFn, page: { limit: number; offset: number }): string {
  const query = `to_tsquery('message_search'::regconfig, ${param(tsQuery(f.words))})`;
  const where: string[] = [];
  if (f.onlyAssignee !== undefined) where.push(`m.assignee = ${param(f.onlyAssignee)}`);
  if (f.channel !== undefined) where.push(`m.channel = ${param(f.channel)}`);
  where.push(...timeConditions(f, param));
  const limit = param(page.limit);
  const offset = param(page.offset);
  // The window carries ids only (the sort of a bitmap scan's matches moves no tsvector); the
  // window's rows are read again by key to be ranked.
  return `${PLAN_WITH_VALUES}
with win as materialized (
  select m.id from messages m
  where m.search @@ ${query}${where.map((w) => ` and ${w}`).join('')}
  order by m.id desc limit ${WINDOW + 1}
), hits as materialized (
  select r.id, ts_rank(r.search, ${query}, 1) as rank
  from (select id from win order by id desc limit ${WINDOW}) w join messages r on r.id = w.id
)
select (select count(*) from win) as matched, t.n as total, ${SELECTED}
from (select count(*) as n from hits) t
left join (select id, rank from hits order by rank desc, id desc limit ${limit} offset ${offset}) h on true
left join messages m on m.id = h.id
order by h.rank desc, h.id desc`;
}
