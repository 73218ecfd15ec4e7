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

// English words too common to tell one entry from another. PostgreSQL's english configuration
// drops them itself; leaving them out of an any-word match keeps SQLite from suggesting every
// entry that holds "the", so both stores rank on the same words.
const STOP_WORDS = new Set(
  (
    'a about above after again against all am an and any are as at be because been before being below ' +
    'between both but by can could did do does doing down during each few for from further had has have ' +
    'having he her here hers herself him himself his how i if in into is it its itself just me more most ' +
    'my myself no nor not now of off on once only or other our ours ourselves out over own please same she ' +
    'should so some such than that the their theirs them themselves then there these they this those ' +
    'through to too under until up very was we were what when where which while who whom why will with ' +
    'would you your yours yourself yourselves hi hello thanks thank'
  ).split(' '),
);

/** At most this many words of a text are matched: a 4,096-character message stays one cheap query. */
export const MAX_MATCH_WORDS = 32;

/** The distinct words of a text worth matching on (lower-case, no stop words), at most MAX_MATCH_WORDS. */
export function significantTokens(text: string): string[] {
  const words = searchTokens(text.toLowerCase()).filter((w) => !STOP_WORDS.has(w));
  return [...new Set(words)].slice(0, MAX_MATCH_WORDS);
}

/**
 * The `limit` knowledge entries best matching any of the tokens (not every one, as searchHits), as
 * `hits` with a positive `score`, higher for a better match: the same engines and weights as
 * searchHits. On SQLite the best are picked inside the full-text index, before any entry row is
 * read, so a message whose words are in most entries reads `limit` rows, not all of them.
 */
export function anyWordHits(
  dialect: DialectName,
  tokens: readonly string[],
  limit: number,
): AliasedRawBuilder<Pick<KnowledgeRow, 'id' | 'title' | 'category'> & { score: number }, 'hits'> {
  if (dialect === 'sqlite') {
    return sql<Pick<KnowledgeRow, 'id' | 'title' | 'category'> & { score: number }>`(select e.id, e.title, e.category,
        -f.r as score
      from (select rowid, bm25(knowledge_fts, 10.0, 1.0) as r from knowledge_fts
        where knowledge_fts match ${anyWordMatch(tokens)} order by r limit ${limit}) f
      cross join knowledge_entries e on e.rowid = f.rowid)`.as('hits');
  }
  // The query is built once, in a one-row subquery that OFFSET 0 keeps PostgreSQL from folding
  // back in: written into the select list it was parsed again for every matching entry (about
  // 450 ms rather than 45 over 5,000 entries, bench/labels.ts).
  return sql<Pick<KnowledgeRow, 'id' | 'title' | 'category'> & { score: number }>`(select id, title, category,
      ts_rank('{0, 0, 0.1, 1.0}'::real[], search, w.q) as score
    from knowledge_entries, (select ${anyWordQuery(tokens)} as q offset 0) w where search @@ w.q)`.as('hits');
}

/** An FTS5 query matching any of the tokens, each quoted as a phrase so its syntax stays literal. */
export const anyWordMatch = (tokens: readonly string[]): string => tokens.map((t) => `"${t}"`).join(' OR ');

/** A tsquery matching any of the tokens, each bound as a value (never parsed as query syntax). */
export const anyWordQuery = (tokens: readonly string[]) =>
  sql`(${sql.join(
    tokens.map((t) => sql`plainto_tsquery('english', ${t})`),
    sql` || `,
  )})`;
