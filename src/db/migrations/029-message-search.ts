// Owns the full-text index behind message search (`GET /messages/search`, docs/search.md): every
// message's content as words, case- and accent-insensitive, never stemmed (a guest's name is a word
// like any other), filled for the messages already held and kept in step in the transaction of
// every insert, content change and delete.
// - SQLite: an FTS5 table over messages (external content: the words are indexed, the text is read
//   from messages itself) with the unicode61 tokenizer folding case and diacritics, kept by
//   triggers. Its keys are messages' rowids: a migration that rebuilds the messages table must fill
//   the index again. Since migration 034 the table is contentless, where FTS5's 'rebuild' is not
//   available: empty it (`insert into message_fts(message_fts) values ('delete-all')`) and insert
//   every message's row with its scope words, as 034's backfill does.
// - PostgreSQL: a stored tsvector column under a GIN index, made with a text search configuration
//   copied from `simple` (no stemming, no stop words) that strips accents with the unaccent
//   dictionary. ASCII punctuation is turned into spaces first, so `anna@hotel.com` or `late-checkout`
//   are words the way FTS5 reads them, not one e-mail or host token.
import { type Kysely, sql } from 'kysely';
import type { MigrationDef } from './helpers.js';

// biome-ignore lint/suspicious/noExplicitAny: migrations run before and outside the typed schema.
const run = (db: Kysely<any>, text: string) => sql.raw(text).execute(db);

/** Every ASCII punctuation character: a separator between words on both stores. */
const PUNCTUATION = '!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~';
const literal = (s: string) => `'${s.replaceAll("'", "''")}'`;

export const messageSearch: MigrationDef = {
  name: '029-message-search',
  async up(db, t) {
    if (t.dialect === 'postgres') {
      // unaccent ships with PostgreSQL (contrib) and is a trusted extension, as pg_trgm (migration 004).
      await run(db, 'create extension if not exists unaccent');
      await run(db, 'create text search configuration message_search (copy = simple)');
      // unaccent is a filtering dictionary: it hands the word without accents on to `simple`, which
      // lowers its case (under the database's LC_CTYPE: a UTF-8 one, as C.UTF-8, folds Ü to ü).
      await run(
        db,
        `alter text search configuration message_search
           alter mapping for word, numword, hword, hword_part, numhword, hword_numpart with unaccent, simple`,
      );
      const spaces = ' '.repeat(PUNCTUATION.length);
      // Adding the stored column computes it for every message already held: the backfill.
      await run(
        db,
        `alter table messages add column search tsvector generated always as
           (to_tsvector('message_search'::regconfig, translate(content, ${literal(PUNCTUATION)}, '${spaces}'))) stored`,
      );
      await run(db, 'create index messages_search_idx on messages using gin (search)');
      return;
    }
    await run(
      db,
      `create virtual table message_fts using fts5(content, content = 'messages', content_rowid = 'rowid',
         tokenize = 'unicode61 remove_diacritics 2')`,
    );
    // The backfill: reads every message's content and indexes it.
    await run(db, "insert into message_fts(message_fts) values ('rebuild')");
    await run(
      db,
      `create trigger message_fts_ai after insert on messages begin
         insert into message_fts(rowid, content) values (new.rowid, new.content);
       end`,
    );
    // Only a change of content touches the index: delivery status updates (several per text) do not.
    await run(
      db,
      `create trigger message_fts_au after update of content on messages when old.content is not new.content begin
         insert into message_fts(message_fts, rowid, content) values ('delete', old.rowid, old.content);
         insert into message_fts(rowid, content) values (new.rowid, new.content);
       end`,
    );
    await run(
      db,
      `create trigger message_fts_ad after delete on messages begin
         insert into message_fts(message_fts, rowid, content) values ('delete', old.rowid, old.content);
       end`,
    );
  },
};
