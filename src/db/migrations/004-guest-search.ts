// Owns the index behind the guest search (`GET /guests?search=`): a substring match over name,
// e-mail and phone, which without an index reads every guest (the count alone grows with the
// guests, docs/performance.md). A trigram index answers a term of three or more characters from
// the guests that contain its trigrams.
// - SQLite: an FTS5 table with the trigram tokenizer, holding each guest's search_text under a
//   stable integer key (guest_search_keys; a guest's own rowid can change on VACUUM), kept in step
//   by triggers in the same transaction as every insert, delete and search_text change.
// - PostgreSQL: pg_trgm's GIN operator class on guests.search_text, which LIKE '%…%' uses as is.
import { type Kysely, sql } from 'kysely';
import type { MigrationDef } from './helpers.js';

// biome-ignore lint/suspicious/noExplicitAny: migrations run before and outside the typed schema.
const run = (db: Kysely<any>, text: string) => sql.raw(text).execute(db);

export const guestSearch: MigrationDef = {
  name: '004-guest-search',
  async up(db, t) {
    if (t.dialect === 'postgres') {
      // pg_trgm ships with PostgreSQL (contrib) and is a trusted extension: a database owner may
      // create it without being a superuser.
      await run(db, 'create extension if not exists pg_trgm');
      await run(db, 'create index guests_search_trgm_idx on guests using gin (search_text gin_trgm_ops)');
      return;
    }
    await run(
      db,
      'create table guest_search_keys (k integer primary key, guest_id text not null unique references guests (id))',
    );
    await run(db, "create virtual table guest_search using fts5(search_text, tokenize = 'trigram')");
    await run(db, 'insert into guest_search_keys (guest_id) select id from guests order by created_at, id');
    await run(
      db,
      `insert into guest_search (rowid, search_text)
       select k.k, g.search_text from guest_search_keys k join guests g on g.id = k.guest_id`,
    );
    await run(
      db,
      `create trigger guest_search_ai after insert on guests begin
         insert into guest_search_keys (guest_id) values (new.id);
         insert into guest_search (rowid, search_text)
           values ((select k from guest_search_keys where guest_id = new.id), new.search_text);
       end`,
    );
    await run(
      db,
      `create trigger guest_search_au after update of search_text on guests
       when old.search_text is not new.search_text begin
         delete from guest_search where rowid = (select k from guest_search_keys where guest_id = old.id);
         insert into guest_search (rowid, search_text)
           values ((select k from guest_search_keys where guest_id = new.id), new.search_text);
       end`,
    );
    await run(
      db,
      `create trigger guest_search_ad before delete on guests begin
         delete from guest_search where rowid = (select k from guest_search_keys where guest_id = old.id);
         delete from guest_search_keys where guest_id = old.id;
       end`,
    );
  },
};
