// Owns full-text matching over canned responses, built as the knowledge base's is
// (src/modules/knowledge/search.ts): the same tokens, engines and weights, with the shortcode
// weighed as the title (a word of either counts ten times one of the content).
import { type AliasedRawBuilder, sql } from 'kysely';
import type { DialectName } from '../../db/store.js';
import type { CannedResponseTable } from '../../db/types.js';
import { anyWordMatch, anyWordQuery } from '../knowledge/search.js';

type Row = { [K in keyof CannedResponseTable]: CannedResponseTable[K] };
export type CannedHit = Row & { rank: number };

/** Canned responses matching every token, as `hits` whose `rank` is lower for a better match. */
export function cannedHits(dialect: DialectName, tokens: readonly string[]): AliasedRawBuilder<CannedHit, 'hits'> {
  if (dialect === 'sqlite') {
    const match = tokens.map((t) => `"${t}"`).join(' ');
    return sql<CannedHit>`(select r.id, r.shortcode, r.title, r.content, r.created_at, r.updated_at,
        bm25(canned_fts, 10.0, 10.0, 1.0) as rank
      from canned_fts cross join canned_responses r on r.rowid = canned_fts.rowid
      where canned_fts match ${match})`.as('hits');
  }
  const words = tokens.join(' ');
  return sql<CannedHit>`(select id, shortcode, title, content, created_at, updated_at,
      -ts_rank('{0, 0, 0.1, 1.0}'::real[], search, plainto_tsquery('english', ${words})) as rank
    from canned_responses where search @@ plainto_tsquery('english', ${words}))`.as('hits');
}

export type CannedSuggestion = Pick<Row, 'id' | 'shortcode' | 'title'> & { score: number };

/**
 * The `limit` canned responses best matching any of the tokens, as `hits` with a positive `score`,
 * higher is better (picked inside the full-text index on SQLite, as anyWordHits does).
 */
export function anyWordCanned(
  dialect: DialectName,
  tokens: readonly string[],
  limit: number,
): AliasedRawBuilder<CannedSuggestion, 'hits'> {
  if (dialect === 'sqlite') {
    return sql<CannedSuggestion>`(select r.id, r.shortcode, r.title, -f.r as score
      from (select rowid, bm25(canned_fts, 10.0, 10.0, 1.0) as r from canned_fts
        where canned_fts match ${anyWordMatch(tokens)} order by r limit ${limit}) f
      cross join canned_responses r on r.rowid = f.rowid)`.as('hits');
  }
  return sql<CannedSuggestion>`(select id, shortcode, title, ts_rank('{0, 0, 0.1, 1.0}'::real[], search, w.q) as score
    from canned_responses, (select ${anyWordQuery(tokens)} as q offset 0) w where search @@ w.q)`.as('hits');
}
