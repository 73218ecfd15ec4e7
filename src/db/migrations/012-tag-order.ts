// Owns guest_tags' copy of its guest's created_at and the (tag, guest_created_at, guest_id) index
// over it, so a tag's guests, newest first, are an index range in the list's own order: a page of
// a tag, at any depth, reads that range up to its offset and the guest rows of the page alone,
// where the (tag, guest_id) index made the list read every tagged guest and sort them, or read
// guests newest first and test each. Guests are never deleted and their created_at never changes,
// so the copy cannot go stale; writers of guest_tags fill it from the guest's row.
import { type Kysely, sql } from 'kysely';
import type { MigrationDef } from './helpers.js';

// biome-ignore lint/suspicious/noExplicitAny: migrations run before and outside the typed schema.
type AnyDb = Kysely<any>;
const run = (db: AnyDb, text: string) => sql.raw(text).execute(db);

export const tagOrder: MigrationDef = {
  name: '012-tag-order',
  async up(db, t) {
    // SQLite adds no NOT NULL column to a table with rows without a default; every writer fills it.
    await db.schema.alterTable('guest_tags').addColumn('guest_created_at', t.ts).execute();
    await run(
      db,
      'update guest_tags set guest_created_at = (select created_at from guests where guests.id = guest_tags.guest_id)',
    );
    if (t.dialect === 'postgres') await run(db, 'alter table guest_tags alter column guest_created_at set not null');
    // The new index also serves every `tag = ?` lookup the old one did (its guest ids, covered).
    await run(db, 'drop index guest_tags_tag_idx');
    await run(db, 'create index guest_tags_order_idx on guest_tags (tag, guest_created_at, guest_id)');
  },
};
