// Owns spreading each count of migrations 002 and 011 over several rows on PostgreSQL, so that
// concurrent writes stop queueing on one row. A count was one row per key (guest_counts a single
// row for every guest): every transaction that created a guest locked that row until it
// committed, and concurrent creates ran one at a time (measured: nearly every active backend
// waiting on another's row lock). Each change now adds its +1 or -1 to one of SLOTS rows of its
// key, picked at random, and a total is the sum of the key's rows; any slot keeps the sum exact,
// so a row's create and its delete need not pick the same one. An update that moves a row between
// two keys changes them in key order, so two moving rows in opposite directions cannot deadlock.
// SQLite has one writer at a time: its triggers and its single row per key stay as they were, and
// the same sums read them.
import { type Kysely, sql } from 'kysely';
import { staffGuestsFunction } from './011-staff-guests.js';
import type { MigrationDef } from './helpers.js';

// biome-ignore lint/suspicious/noExplicitAny: migrations run before and outside the typed schema.
type AnyDb = Kysely<any>;
const run = (db: AnyDb, text: string) => sql.raw(text).execute(db);

/**
 * Rows per key: about as many concurrent writers of one key as run without waiting for each other.
 * The one guest total takes every guest create, so it gets the most; a list's total sums every row
 * of its keys (the unfiltered conversation list: every key's), so the keyed counts get fewer.
 */
const GUEST_SLOTS = 16;
const KEYED_SLOTS = 4;

interface Keyed {
  counts: string;
  /** The primary key constraint to widen with the slot. */
  pk: string;
  keys: { col: string; expr: (row: string) => string }[];
}

const col = (name: string) => ({ col: name, expr: (row: string) => `${row}.${name}` });
const orEmpty = (name: string, key: string) => ({ col: key, expr: (row: string) => `coalesce(${row}.${name}, '')` });

const KEYED: Keyed[] = [
  {
    counts: 'conversation_counts',
    pk: 'conversation_counts_pk',
    keys: [col('status'), col('channel'), orEmpty('assignee', 'assignee_key')],
  },
  {
    counts: 'task_counts',
    pk: 'task_counts_pk',
    keys: [col('status'), col('priority'), col('department'), orEmpty('assignee', 'assignee_key')],
  },
];

/** Adds `delta` to a random slot of `row`'s key. */
function add(counts: string, keys: Keyed['keys'], row: string, delta: number): string {
  const cols = keys.map((k) => k.col).join(', ');
  const values = keys.map((k) => k.expr(row)).join(', ');
  return `insert into ${counts} (${cols}, slot, n) values (${values}, s, ${delta})
    on conflict (${cols}, slot) do update set n = ${counts}.n + excluded.n;`;
}

export const countSlots: MigrationDef = {
  name: '013-count-slots',
  async up(db, t) {
    if (t.dialect !== 'postgres') return;
    for (const k of KEYED) {
      const cols = k.keys.map((c) => c.col).join(', ');
      const tuple = (row: string) => `(${k.keys.map((c) => c.expr(row)).join(', ')})`;
      await run(db, `alter table ${k.counts} add column slot smallint not null default 0`);
      await run(db, `alter table ${k.counts} drop constraint ${k.pk}`);
      await run(db, `alter table ${k.counts} add constraint ${k.pk} primary key (${cols}, slot)`);
      await run(
        db,
        `create or replace function ${k.counts}_trg() returns trigger language plpgsql as $$
         declare s smallint := floor(random() * ${KEYED_SLOTS});
         begin
           if tg_op = 'INSERT' then ${add(k.counts, k.keys, 'new', 1)}
           elsif tg_op = 'DELETE' then ${add(k.counts, k.keys, 'old', -1)}
           elsif ${tuple('old')} < ${tuple('new')} then
             ${add(k.counts, k.keys, 'old', -1)} ${add(k.counts, k.keys, 'new', 1)}
           else
             ${add(k.counts, k.keys, 'new', 1)} ${add(k.counts, k.keys, 'old', -1)}
           end if;
           return null;
         end $$`,
      );
    }

    // guest_counts' id becomes the slot (the one row it had is id 1).
    await run(
      db,
      `create or replace function guest_counts_trg() returns trigger language plpgsql as $$
       begin
         insert into guest_counts (id, n)
           values (1 + floor(random() * ${GUEST_SLOTS}), case when tg_op = 'INSERT' then 1 else -1 end)
           on conflict (id) do update set n = guest_counts.n + excluded.n;
         return null;
       end $$`,
    );

    // A member's count of guests, moved by staff_guests' inserts and deletes (migration 011).
    const member = [{ col: 'staff_id', expr: (row: string) => `${row}.staff_id` }];
    await run(db, 'alter table staff_guest_counts add column slot smallint not null default 0');
    await run(db, 'alter table staff_guest_counts drop constraint staff_guest_counts_pkey');
    await run(db, 'alter table staff_guest_counts add constraint staff_guest_counts_pkey primary key (staff_id, slot)');
    await run(
      db,
      `create or replace function staff_guest_counts_trg() returns trigger language plpgsql as $$
       declare s smallint := floor(random() * ${KEYED_SLOTS});
       begin
         if tg_op = 'INSERT' then ${add('staff_guest_counts', member, 'new', 1)}
         else ${add('staff_guest_counts', member, 'old', -1)} end if;
         return null;
       end $$`,
    );
    // A reassignment's pre-lock of both members' counts, now in (staff_id, slot) order.
    await run(db, staffGuestsFunction('create or replace', 'staff_id, slot'));
  },
};
