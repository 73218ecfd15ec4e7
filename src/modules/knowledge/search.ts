// Owns full-text search over knowledge entries: turning a reader's text into word tokens (never
// handed raw to a query language) and the one place where SQLite and PostgreSQL differ.
import { type AliasedRawBuilder, sql } from 'kysely';
import type { DialectName } from '../../db/store.js';
import type { KnowledgeRow } from '../../db/types.js';

// Letters and digits as the tokenizers see them; a token starts with one so it is never just a
// combining mark, which would make an empty FTS5 phrase.
const WORD = /[\p{L}\p{N}][\p{L}\p{N}\p{M}]*/gu;

export function searchTokens(text: string): string[] {
  return text.match(WORD) ?? [];
}

export type Hit = KnowledgeRow & { rank: number };

/**
 * The entries matching every token, as a derived table `hits` whose `rank` is lower for a better
 * match, so the caller filters and orders it the same way on both stores. A title match weighs
 * ten times a content match on both (bm25 column weights; ts_rank weights of A and B).
 */
export function searchHits(dialect: DialectName, tokens: readonly string[]): AliasedRawBuilder<Hit, 'hits'> {
  if (dialect === 'sqlite') {
    // Each token quoted as a phrase, so FTS5 syntax in the text (NEAR, *, -, column:) stays literal.
    const match = tokens.map((t) => `"${t}"`).join(' ');
    // CROSS JOIN pins the full-text index as the outer loop: with a category filter the planner
    // would otherwise walk the category and re-run the MATCH once per entry in it.
    return sql<Hit>`(select e.id, e.title, e.content, e.category, e.created_at, e.updated_at,
        bm25(knowledge_fts, 10.0, 1.0) as rank
      from knowledge_fts cross join knowledge_entries e on e.rowid = knowledge_fts.rowid
      where knowledge_fts match ${match})`.as('hits');
  }
  // plainto_tsquery over the tokens ANDs them as FTS5 does, rather than reading OR, "…" and - as
  // websearch_to_tsquery would, so a search means the same on both stores.
  const words = tokens.join(' ');
  return sql<Hit>`(select id, title, content, category, created_at, updated_at,
      -ts_rank('{0, 0, 0.1, 1.0}'::real[], search, plainto_tsquery('english', ${words})) as rank
    from knowledge_entries where search @@ plainto_tsquery('english', ${words}))`.as('hits');
}
