// Owns the message search query (docs/search.md): the newest matching messages (at most WINDOW),
// narrowed by channel, time and a staff member's own conversations, ranked best first, a page of
// them and their number (on PostgreSQL in one statement, on SQLite the window then the page's
// messages, ranked in between by the app). Ranking only the newest WINDOW matches keeps a
// search's cost bounded by WINDOW rather than by how common its words are: a word in one message in
// thirty has 170,000 matches at 5M messages, each one ranked costing about a microsecond (and a row
// read when a filter needs its conversation), where the newest thousand are found in a few ms.
import { CompiledQuery } from 'kysely';
import { PLAN_WITH_VALUES } from '../../db/store.js';
import type { Executor } from '../../db/types.js';
import { MESSAGE_COLUMNS, toMessage } from '../conversations/messages-repository.js';
import type { MessageView } from '../conversations/schemas.js';
import { ftsMatch, relevance, tsQuery } from './words.js';

export interface SearchFilter {
  words: readonly string[];
  channel?: string;
  /** ISO 8601; messages created at or after it. */
  from?: string;
  /** ISO 8601; messages created before it. */
  to?: string;
  /** A staff-role caller's id: only messages of conversations assigned to them. */
  onlyAssignee?: string;
  /**
   * PostgreSQL: the first message id the recent index covers (recent.ts), when there is one: the
   * newest matches are read from it first.
   */
  recentCutoff?: string | null;
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

/** A message id as this API makes them (a ULID): the only text the recent index's cutoff may be. */
const MESSAGE_ID = /^msg_[0-9a-z]{26}$/;

// The columns every message read selects: a new column reaches search hits with the rest.
const SELECTED = MESSAGE_COLUMNS.map((c) => `m.${c}`).join(', ');

type MessageRow = Parameters<typeof toMessage>[0];
type Row = MessageRow & { total: number | string; matched: number | string };

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
  if (!pg) {
    const { rows } = await x.executeQuery<WindowRow>(CompiledQuery.raw(sqliteSql(f, param), values));
    return sqlitePage(x, rows, f.words, page);
  }
  const text = postgresSql(f, param, page);
  const { rows } = await x.executeQuery<Row>(CompiledQuery.raw(text, values));
  const total = Number(rows[0]?.total ?? 0);
  const capped = Number(rows[0]?.matched ?? 0) > WINDOW;
  return { rows: rows.filter((r) => r.id !== null).map(toMessage), total, capped };
}

type ParamFn = (v: unknown, cast?: string) => string;
type WindowRow = { r: number; id: string; content: string };

/**
 * The window's rows ranked by relevance() (words.ts), ties to the newer (the higher rowid), and
 * the messages of the page asked for, read by id (a message deleted meanwhile is left out).
 */
async function sqlitePage(
  x: Executor,
  rows: WindowRow[],
  words: readonly string[],
  page: { limit: number; offset: number },
): Promise<SearchPage> {
  const capped = rows.length > WINDOW;
  const window = capped ? rows.slice(0, WINDOW) : rows;
  const score = relevance(
    window.map((r) => r.content),
    words,
  );
  const order = window.map((_, i) => i).sort((a, b) => score[b]! - score[a]! || window[b]!.r - window[a]!.r);
  const ids = order.slice(page.offset, page.offset + page.limit).map((i) => window[i]!.id);
  if (ids.length === 0) return { rows: [], total: window.length, capped };
  const read = await x.executeQuery<MessageRow>(
    CompiledQuery.raw(`select ${SELECTED} from messages m where m.id in (${ids.map(() => '?').join(', ')})`, ids),
  );
  const byId = new Map(read.rows.map((r) => [r.id, r]));
  const shown = ids.flatMap((id) => {
    const r = byId.get(id);
    return r === undefined ? [] : [toMessage(r)];
  });
  return { rows: shown, total: window.length, capped };
}

/**
 * The newest matches, with their content: FTS5 drives (CROSS JOIN keeps it the outer loop),
 * newest first (its own rowid order, so the scan stops at the window), and each match's message is
 * read by rowid, for a time filter and for its content, which ranks it. The assignee and channel
 * are words of the index's `scope` column (migration 034), matched with the search's words inside
 * the index.
 *
 * The window is ranked in the app (sqlitePage) rather than by FTS5's bm25, which counts, once per
 * search, the rows holding each phrase of the MATCH (a word's rarity) by reading every match of
 * it: for a common word or a short prefix most of a search's cost, and growing with the store,
 * where the window's thousand messages are read by rowid at the same cost at any size.
 */
function sqliteSql(f: SearchFilter, param: ParamFn): string {
  const match = param(ftsMatch(f.words, { assignee: f.onlyAssignee, channel: f.channel }));
  const where = timeConditions(f, param);
  return `select f.rowid as r, m.id, m.content
from message_fts f cross join messages m on m.rowid = f.rowid
where message_fts match ${match}${where.map((w) => ` and ${w}`).join('')}
order by f.rowid desc limit ${WINDOW + 1}`;
}

/**
 * The newest matches by id (time-ordered): the planner reads the GIN index and sorts the matches
 * when they are few, or walks the primary key (a narrowed search: its scope's B-tree) backwards
 * testing each row when they are many.
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
  // A narrowed search orders by the id in the "C" collation, which only the scope's B-trees give
  // (migration 035): walked newest first, they test the scope's messages alone, where the primary
  // key would test every message (a word the scope lacks: all of them). Ids are ASCII, so the
  // order is the same.
  const narrowed = f.onlyAssignee !== undefined || f.channel !== undefined;
  const newest = narrowed ? 'm.id collate "C" desc' : 'm.id desc';
  const conditions = `m.search @@ ${query}${where.map((w) => ` and ${w}`).join('')}`;
  // The window carries ids only (the sort of a bitmap scan's matches moves no tsvector); the
  // window's rows are read again by key to be ranked.
  const cutoff = f.recentCutoff ?? null;
  const win =
    cutoff === null || !MESSAGE_ID.test(cutoff)
      ? `select m.id from messages m where ${conditions} order by ${newest} limit ${WINDOW + 1}`
      : // The newest matches among the messages the recent index covers (the cutoff is a literal so
        // the planner may use that partial index), then, only when they are too few, the older
        // ones: Append runs its branches in order, and the limit stops it before the second when
        // the first filled the window. Every id at or past the cutoff is newer than every id
        // before it, in either order (ids are ASCII), so the two make the newest matches.
        // The older ones are read from the whole GIN index and sorted, never found by walking back
        // from the cutoff (their order is an expression no index gives): they are sought only when
        // the words are rare among the newest messages, where a walk would test every older
        // message of the scope (a word a staff member's conversations lack: all of them).
        `(select m.id from messages m where ${conditions} and m.id >= '${cutoff}' order by ${newest} limit ${WINDOW + 1})
  union all
  (select m.id from messages m where ${conditions} and m.id < '${cutoff}' order by (m.id || '') collate "C" desc limit ${WINDOW + 1})
  limit ${WINDOW + 1}`;
  return `${PLAN_WITH_VALUES}
with win as materialized (
  ${win}
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
