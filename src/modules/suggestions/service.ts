// Owns suggesting answers to a guest: the knowledge entries and canned responses that best match
// the guest's latest inbound message, ranked by the knowledge base's full-text search
// (src/modules/knowledge/search.ts) over any of its words rather than all of them.
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
  const knowledge = await db
    .selectFrom(anyWordHits(db.dialect, tokens, MAX_SUGGESTIONS))
    .select(['id', 'title', 'category', 'score'])
    .where('score', '>', 0)
    .orderBy('score', 'desc')
    .orderBy('id')
    .limit(MAX_SUGGESTIONS)
    .execute();
  const canned = await db
    .selectFrom(anyWordCanned(db.dialect, tokens, MAX_SUGGESTIONS))
    .select(['id', 'shortcode', 'title', 'score'])
    .where('score', '>', 0)
    .orderBy('score', 'desc')
    .orderBy('id')
    .limit(MAX_SUGGESTIONS)
    .execute();
  return {
    knowledge: knowledge.map((k) => ({ id: k.id, title: k.title, category: k.category, score: scoreOf(k.score) })),
    cannedResponses: canned.map((c) => ({ id: c.id, shortcode: c.shortcode, title: c.title, score: scoreOf(c.score) })),
  };
}
