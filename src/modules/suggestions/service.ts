// Owns suggesting answers to a guest: the knowledge entries and canned responses that best match
// the guest's latest inbound message, ranked by the knowledge base's full-text search
// (src/modules/knowledge/search.ts) over any of its words rather than all of them.
import { sql } from 'kysely';
import type { Executor } from '../../db/types.js';
import { anyWordCanned } from '../canned-responses/search.js';
import { anyWordHits, significantTokens } from '../knowledge/search.js';
import { MAX_SUGGESTIONS, type SuggestionsView } from './schemas.js';

/** The latest message the guest wrote in the conversation, walking its messages newest first. */
async function latestInbound(db: Executor, conversationId: string): Promise<string | undefined> {
  const row = await db
    .selectFrom('messages')
    .select('content')
    .where('conversation_id', '=', conversationId)
    .where('direction', '=', 'inbound')
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(1)
    .executeTakeFirst();
  return row?.content;
}

/** Six significant digits: enough to order by, positive however small. */
const scoreOf = (raw: unknown): number => Number(Number(raw).toPrecision(6));

export async function suggestionsFor(db: Executor, conversationId: string): Promise<SuggestionsView> {
  const text = await latestInbound(db, conversationId);
  const tokens = text === undefined ? [] : significantTokens(text);
  if (tokens.length === 0) return { knowledge: [], cannedResponses: [] };
  // Both lists in one statement: one round trip and one plan rather than two (on PostgreSQL each
  // waits its turn at a busy server). Each list is picked and ordered in its own derived table.
  // Entries matching no word (score 0) are left out here, after the limit, not in SQL: PostgreSQL
  // would compute ts_rank twice for every matching entry, once for the filter and once for the
  // order, and ranking is most of the query's cost. Best first, a score of 0 can only be last, so
  // dropping it after the limit leaves the same entries.
  const knowledge = db
    .selectFrom(anyWordHits(db.dialect, tokens, MAX_SUGGESTIONS))
    .select([sql.lit('knowledge').as('list'), 'id', 'title', 'category as detail', 'score'])
    .orderBy('score', 'desc')
    .orderBy('id')
    .limit(MAX_SUGGESTIONS);
  const canned = db
    .selectFrom(anyWordCanned(db.dialect, tokens, MAX_SUGGESTIONS))
    .select([sql.lit('canned').as('list'), 'id', 'title', 'shortcode as detail', 'score'])
    .orderBy('score', 'desc')
    .orderBy('id')
    .limit(MAX_SUGGESTIONS);
  const rows = await db
    .selectFrom(knowledge.as('k'))
    .selectAll()
    .unionAll(db.selectFrom(canned.as('c')).selectAll())
    .execute();
  // A union promises no order: each list (three rows at most) is put back in its own here.
  const best = (list: string) =>
    rows
      .filter((r) => r.list === list && Number(r.score) > 0)
      .sort((a, b) => Number(b.score) - Number(a.score) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return {
    knowledge: best('knowledge').map((k) => ({
      id: k.id,
      title: k.title,
      category: k.detail,
      score: scoreOf(k.score),
    })),
    cannedResponses: best('canned').map((c) => ({
      id: c.id,
      shortcode: c.detail,
      title: c.title,
      score: scoreOf(c.score),
    })),
  };
}
