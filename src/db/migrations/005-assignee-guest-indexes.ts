// Owns the indexes behind a staff member's guest list (`GET /guests` as staff: the guests of the
// conversations and tasks assigned to them, src/modules/guests/repository.ts). The list starts
// from the assignments; with (assignee) alone leading an index, every assignment's guest_id is
// read from its table row. With guest_id in the index too, the guests come from the index alone
// (an index-only scan on PostgreSQL once the visibility map is set by vacuum).
import { type Kysely, sql } from 'kysely';
import type { MigrationDef } from './helpers.js';

// biome-ignore lint/suspicious/noExplicitAny: migrations run before and outside the typed schema.
const run = (db: Kysely<any>, text: string) => sql.raw(text).execute(db);

export const assigneeGuestIndexes: MigrationDef = {
  name: '005-assignee-guest-indexes',
  async up(db) {
    await run(db, 'create index conversations_assignee_guest_idx on conversations (assignee, guest_id)');
    await run(db, 'create index tasks_assignee_guest_idx on tasks (assignee, guest_id)');
  },
};
