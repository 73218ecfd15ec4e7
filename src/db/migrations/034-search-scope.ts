// Owns the scope of the message search index (docs/search.md, How it is stored): each message's
// conversation assignee and channel are held in the index beside its words, so a staff member's
// search and a channel filter are an intersection inside the index rather than a test of every
// match against its conversation. A change of a conversation's assignee or channel rewrites its
// messages' index entries in the same transaction (a trigger), so a reassigned conversation is
// found by its new assignee, and no longer by the old one, from the moment the change commits.
// - SQLite: message_fts becomes a contentless FTS5 table (content='', contentless_delete=1: rows
//   are deleted by rowid alone) of two columns: the message's content, and its scope as two words,
//   `a<assignee id without '_'>` (`anone` when unassigned) and `c<channel>`. A search matches its
//   words in `content` only, so a content word can never match a scope word.
// - PostgreSQL: messages gain `assignee` and `channel`, copied from the conversation by triggers
//   (on insert, under the conversation's row lock, so a concurrent reassignment cannot leave a new
//   message with the old assignee), and the GIN index covers `search`, `assignee` and `channel`
//   (scalars in GIN through btree_gin, a trusted contrib extension). Ranking reads `search` alone,
//   as before.
import { type Kysely, sql } from 'kysely';
import type { MigrationDef } from './helpers.js';

// biome-ignore lint/suspicious/noExplicitAny: migrations run before and outside the typed schema.
const run = (db: Kysely<any>, text: string) => sql.raw(text).execute(db);

/**
 * The scope words of a message of conversation `c` (an SQL row alias) on SQLite. Kept in step with
 * scopeMatch() in src/modules/search/words.ts, which spells the same words for a query.
 */
const scope = (c: string) => `'a' || replace(coalesce(${c}.assignee, 'none'), '_', '') || ' c' || ${c}.channel`;

export const searchScope: MigrationDef = {
  name: '034-search-scope',
  async up(db, t) {
    if (t.dialect === 'postgres') {
      await run(db, 'create extension if not exists btree_gin');
      // The index is rebuilt after the copy: updating every row under it would write each row's
      // entries twice.
      await run(db, 'drop index messages_search_idx');
      await run(db, 'alter table messages add column assignee text, add column channel text');
      // Row by row in the table's own order (a subquery per row, not a join, whose hash order
      // would scatter the new row versions): rows written one after another stay on neighbouring
      // pages, as a search reading the newest messages by id expects (and the planner counts on).
      await run(
        db,
        `update messages m set (assignee, channel) =
           (select c.assignee, c.channel from conversations c where c.id = m.conversation_id)`,
      );
      await run(db, 'create index messages_search_idx on messages using gin (search, assignee, channel)');
      // The planner's statistics of the new columns (autovacuum reclaims the old row versions later).
      // Not on a new store: statistics of an empty table say so, and the planner, trusting them,
      // plans it as one page; plans cached on long-lived connections (foreign-key checks, the
      // functions' statements) then read the whole table until autovacuum analyzes it again.
      // Never analyzed, it is planned by its size on disk (test/db/statistics.test.ts).
      await run(db, `do $$ begin if exists (select from messages) then analyze messages; end if; end $$`);
      // FOR NO KEY UPDATE: the lock a reassignment takes. Every writer of a message has already
      // taken it (the conversation is advanced or created first), so this waits for nothing there;
      // a writer that had not would wait for a reassignment in flight and read its result.
      await run(
        db,
        `create function message_scope() returns trigger language plpgsql as $$
         begin
           select c.assignee, c.channel into new.assignee, new.channel
             from conversations c where c.id = new.conversation_id for no key update;
           return new;
         end $$`,
      );
      await run(
        db,
        `create trigger messages_scope before insert or update of conversation_id on messages
           for each row execute function message_scope()`,
      );
      await run(
        db,
        `create function conversation_scope() returns trigger language plpgsql as $$
         begin
           update messages set assignee = new.assignee, channel = new.channel where conversation_id = new.id;
           return null;
         end $$`,
      );
      await run(
        db,
        `create trigger conversations_scope after update of assignee, channel on conversations for each row
           when (old.assignee is distinct from new.assignee or old.channel is distinct from new.channel)
           execute function conversation_scope()`,
      );
      return;
    }
    await run(db, 'drop trigger message_fts_ai');
    await run(db, 'drop trigger message_fts_au');
    await run(db, 'drop trigger message_fts_ad');
    await run(db, 'drop table message_fts');
    await run(
      db,
      `create virtual table message_fts using fts5(content, scope, content = '', contentless_delete = 1,
         tokenize = 'unicode61 remove_diacritics 2')`,
    );
    // The backfill: every message's words and its conversation's scope.
    await run(
      db,
      `insert into message_fts(rowid, content, scope)
         select m.rowid, m.content, ${scope('c')} from messages m join conversations c on c.id = m.conversation_id`,
    );
    await run(
      db,
      `create trigger message_fts_ai after insert on messages begin
         insert into message_fts(rowid, content, scope)
           select new.rowid, new.content, ${scope('c')} from conversations c where c.id = new.conversation_id;
       end`,
    );
    // Only a change of content touches the index: delivery status updates (several per text) do not.
    await run(
      db,
      `create trigger message_fts_au after update of content, conversation_id on messages
         when old.content is not new.content or old.conversation_id is not new.conversation_id begin
         insert or replace into message_fts(rowid, content, scope)
           select new.rowid, new.content, ${scope('c')} from conversations c where c.id = new.conversation_id;
       end`,
    );
    await run(
      db,
      `create trigger message_fts_ad after delete on messages begin
         delete from message_fts where rowid = old.rowid;
       end`,
    );
    await run(
      db,
      `create trigger message_fts_scope after update of assignee, channel on conversations
         when old.assignee is not new.assignee or old.channel is not new.channel begin
         insert or replace into message_fts(rowid, content, scope)
           select m.rowid, m.content, ${scope('new')} from messages m where m.conversation_id = new.id;
       end`,
    );
  },
};
