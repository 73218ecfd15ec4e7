// Owns staff_guests: for each staff member, the guests of the conversations and tasks assigned to
// them (`GET /guests` as staff), with the guest's created_at, so that list is an index range in its
// own order (newest guest first) whatever the number of assignments; staff_guest_counts holds each
// member's number of such guests, the list's total. `refs` is how many of the member's
// conversations and tasks name the guest; a row goes when it drops to 0. Triggers on conversations
// and tasks keep staff_guests exact, and triggers on staff_guests keep the counts; guests are never
// deleted and their created_at never changes, so the copy of it cannot go stale.
import { type Kysely, sql } from 'kysely';
import type { MigrationDef } from './helpers.js';

// biome-ignore lint/suspicious/noExplicitAny: migrations run before and outside the typed schema.
type AnyDb = Kysely<any>;
const run = (db: AnyDb, text: string) => sql.raw(text).execute(db);

const TABLES = ['conversations', 'tasks'] as const;

/** Adds one reference from `row`'s assignee to its guest (none when either is null). */
const increment = (row: string) =>
  `insert into staff_guests (staff_id, guest_id, guest_created_at, refs)
     select ${row}.assignee, g.id, g.created_at, 1 from guests g
     where g.id = ${row}.guest_id and ${row}.assignee is not null
   on conflict (staff_id, guest_id) do update set refs = staff_guests.refs + 1;`;

/** Removes one reference; the row goes with its last. */
const decrement = (row: string) =>
  `update staff_guests set refs = refs - 1 where staff_id = ${row}.assignee and guest_id = ${row}.guest_id;
   delete from staff_guests where staff_id = ${row}.assignee and guest_id = ${row}.guest_id and refs <= 0;`;

/**
 * PostgreSQL's trigger function keeping staff_guests. A reassignment touches two rows of each
 * table; two moving rows in opposite directions would each hold one and wait for the other, so
 * the rows it may touch are locked first, in key order: the two members' counts (ordered by
 * `countsOrder`, their key), then their rows for the guest. Migration 013 redefines it when the
 * counts gain a slot.
 */
export const staffGuestsFunction = (verb: 'create' | 'create or replace', countsOrder: string) =>
  `${verb} function staff_guests_trg() returns trigger language plpgsql as $$
   begin
     if tg_op = 'UPDATE' then
       perform 1 from staff_guest_counts where staff_id in (old.assignee, new.assignee)
         order by ${countsOrder} for update;
       perform 1 from staff_guests
         where (staff_id, guest_id) in ((old.assignee, old.guest_id), (new.assignee, new.guest_id))
         order by staff_id, guest_id for update;
     end if;
     if tg_op in ('UPDATE', 'DELETE') then ${decrement('old')} end if;
     if tg_op in ('INSERT', 'UPDATE') then ${increment('new')} end if;
     return null;
   end $$`;

export const staffGuests: MigrationDef = {
  name: '011-staff-guests',
  async up(db, t) {
    await db.schema
      .createTable('staff_guests')
      .addColumn('staff_id', 'text', (c) => c.notNull())
      .addColumn('guest_id', 'text', (c) => c.notNull())
      .addColumn('guest_created_at', t.ts, (c) => c.notNull())
      .addColumn('refs', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('staff_guests_pk', ['staff_id', 'guest_id'])
      .execute();
    await run(db, 'create index staff_guests_order_idx on staff_guests (staff_id, guest_created_at, guest_id)');
    await db.schema
      .createTable('staff_guest_counts')
      .addColumn('staff_id', 'text', (c) => c.primaryKey())
      .addColumn('n', 'bigint', (c) => c.notNull())
      .execute();
    // A row of staff_guests inserted (an upsert that updates fires no insert trigger) or deleted
    // moves its member's count. Counts that drop to 0 are kept, as in 002.
    const countUp = `insert into staff_guest_counts (staff_id, n) values (new.staff_id, 1)
       on conflict (staff_id) do update set n = staff_guest_counts.n + 1;`;
    const countDown = 'update staff_guest_counts set n = n - 1 where staff_id = old.staff_id;';
    if (t.dialect === 'sqlite') {
      await run(db, `create trigger staff_guest_counts_ai after insert on staff_guests begin ${countUp} end`);
      await run(db, `create trigger staff_guest_counts_ad after delete on staff_guests begin ${countDown} end`);
    } else {
      await run(
        db,
        `create function staff_guest_counts_trg() returns trigger language plpgsql as $$
         begin
           if tg_op = 'INSERT' then ${countUp} else ${countDown} end if;
           return null;
         end $$`,
      );
      await run(
        db,
        `create trigger staff_guest_counts_aid after insert or delete on staff_guests
           for each row execute function staff_guest_counts_trg()`,
      );
    }

    // Triggers before the backfill (which fills the counts through their own triggers), as in 002:
    // on PostgreSQL CREATE TRIGGER holds writers off until the migration commits; on SQLite the
    // migration's transaction already does.
    if (t.dialect === 'sqlite') {
      for (const table of TABLES) {
        await run(db, `create trigger staff_guests_${table}_ai after insert on ${table} begin ${increment('new')} end`);
        await run(db, `create trigger staff_guests_${table}_ad after delete on ${table} begin ${decrement('old')} end`);
        await run(
          db,
          `create trigger staff_guests_${table}_au after update of assignee, guest_id on ${table}
             when old.assignee is not new.assignee or old.guest_id is not new.guest_id
             begin ${decrement('old')} ${increment('new')} end`,
        );
      }
    } else {
      // A reassignment touches two rows of each table; two moving rows in opposite directions
      // would each hold one and wait for the other, so the rows it may touch are locked first, in
      // key order: the two members' counts, then their rows for the guest.
      await run(db, staffGuestsFunction('create', 'staff_id'));
      for (const table of TABLES) {
        await run(
          db,
          `create trigger staff_guests_${table}_aid after insert or delete on ${table}
             for each row execute function staff_guests_trg()`,
        );
        await run(
          db,
          `create trigger staff_guests_${table}_au after update of assignee, guest_id on ${table}
             for each row when (old.assignee is distinct from new.assignee or old.guest_id is distinct from new.guest_id)
             execute function staff_guests_trg()`,
        );
      }
    }

    await run(
      db,
      `insert into staff_guests (staff_id, guest_id, guest_created_at, refs)
         select a.assignee, g.id, g.created_at, count(*)
         from (select assignee, guest_id from conversations where assignee is not null
               union all
               select assignee, guest_id from tasks where assignee is not null and guest_id is not null) a
         join guests g on g.id = a.guest_id
         group by a.assignee, g.id, g.created_at`,
    );
  },
};
