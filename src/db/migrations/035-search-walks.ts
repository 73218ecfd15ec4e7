// Owns the indexes a narrowed message search walks (docs/search.md, Speed): on PostgreSQL, B-trees
// on (assignee, id) and (channel, id), so a staff member's search or a channel filter that finds
// its words common walks that scope's messages newest first, testing only them, where it walked
// every message by the primary key (a word the member's conversations lack then read the whole
// store). The id is kept in the "C" collation there, and the search orders by it so: the primary
// key cannot give that order, so the planner weighs walking the scope against reading the words'
// matches from the GIN index, never walking every message. Message ids are ASCII, ordered alike in
// either collation. SQLite has nothing to add: its index holds the scope as words (migration 034).
import { type Kysely, sql } from 'kysely';
import type { MigrationDef } from './helpers.js';

// biome-ignore lint/suspicious/noExplicitAny: migrations run before and outside the typed schema.
const run = (db: Kysely<any>, text: string) => sql.raw(text).execute(db);

export const searchWalks: MigrationDef = {
  name: '035-search-walks',
  async up(db, t) {
    if (t.dialect !== 'postgres') return;
    await run(db, 'create index messages_assignee_walk_idx on messages (assignee, id collate "C")');
    await run(db, 'create index messages_channel_walk_idx on messages (channel, id collate "C")');
  },
};
