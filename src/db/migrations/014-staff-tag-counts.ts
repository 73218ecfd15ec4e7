// Owns staff_tag_counts: for each staff member and tag, how many of the member's guests
// (staff_guests, migration 011) hold the tag, so a member's list of a tag (`GET /guests?tag=` as
// staff) reads its total in one key range instead of looking every guest of the tag up among the
// member's. Kept by triggers on both sides of the pair: a member gaining or losing a guest
// (staff_guests) moves the counts of that guest's tags, and a guest gaining or losing a tag
// (guest_tags) moves the counts of that guest's members. On PostgreSQL both triggers first lock
// the guest's row FOR SHARE: a new assignment and a tag change of the same guest, committing at
// once, would otherwise each miss the other's row and the pair would never be counted; a tag
// change holds the row's update lock already (the guest is updated with its tags), so one waits
// for the other and then reads what it wrote. Counts spread over slots as in migration 013.
import { type Kysely, sql } from 'kysely';
import type { MigrationDef } from './helpers.js';

// biome-ignore lint/suspicious/noExplicitAny: migrations run before and outside the typed schema.
type AnyDb = Kysely<any>;
const run = (db: AnyDb, text: string) => sql.raw(text).execute(db);

const SLOTS = 4;

/** Adds `delta` to (staff, tag) for each row `pairs` selects as (staff_id, tag), in slot `slot`. */
const add = (pairs: string, delta: number, slot: string) =>
  `insert into staff_tag_counts (staff_id, tag, slot, n) select p.staff_id, p.tag, ${slot}, ${delta} from (${pairs}) p where true
     on conflict (staff_id, tag, slot) do update set n = staff_tag_counts.n + excluded.n;`;

const ofMemberRow = (row: string) =>
  `select ${row}.staff_id as staff_id, gt.tag as tag from guest_tags gt where gt.guest_id = ${row}.guest_id`;
const ofTagRow = (row: string) =>
  `select sg.staff_id as staff_id, ${row}.tag as tag from staff_guests sg where sg.guest_id = ${row}.guest_id`;

export const staffTagCounts: MigrationDef = {
  name: '014-staff-tag-counts',
  async up(db, t) {
    await db.schema
      .createTable('staff_tag_counts')
      .addColumn('staff_id', 'text', (c) => c.notNull())
      .addColumn('tag', 'text', (c) => c.notNull())
      .addColumn('slot', 'smallint', (c) => c.notNull())
      .addColumn('n', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('staff_tag_counts_pk', ['staff_id', 'tag', 'slot'])
      .execute();
    // A guest's members, for the triggers on guest_tags.
    await run(db, 'create index staff_guests_guest_idx on staff_guests (guest_id, staff_id)');

    if (t.dialect === 'sqlite') {
      for (const [table, short, of] of [
        ['staff_guests', 'sg', ofMemberRow],
        ['guest_tags', 'gt', ofTagRow],
      ] as const) {
        await run(
          db,
          `create trigger staff_tag_counts_${short}_ai after insert on ${table} begin ${add(of('new'), 1, '0')} end`,
        );
        await run(
          db,
          `create trigger staff_tag_counts_${short}_ad after delete on ${table} begin ${add(of('old'), -1, '0')} end`,
        );
      }
    } else {
      const slot = `floor(random() * ${SLOTS})::smallint`;
      for (const [table, of] of [
        ['staff_guests', ofMemberRow],
        ['guest_tags', ofTagRow],
      ] as const) {
        await run(
          db,
          `create function staff_tag_counts_${table}_trg() returns trigger language plpgsql as $$
           begin
             if tg_op = 'INSERT' then
               perform 1 from guests where id = new.guest_id for share;
               ${add(of('new'), 1, slot)}
             else
               perform 1 from guests where id = old.guest_id for share;
               ${add(of('old'), -1, slot)}
             end if;
             return null;
           end $$`,
        );
        await run(
          db,
          `create trigger staff_tag_counts_${table}_aid after insert or delete on ${table}
             for each row execute function staff_tag_counts_${table}_trg()`,
        );
      }
    }

    // Triggers before the backfill, as in 002 and 011.
    await run(
      db,
      `insert into staff_tag_counts (staff_id, tag, slot, n)
         select sg.staff_id, gt.tag, 0, count(*) from staff_guests sg join guest_tags gt on gt.guest_id = sg.guest_id
         group by sg.staff_id, gt.tag`,
    );
  },
};
