// Owns the maintained row counts behind the lists' `meta.total`: conversation_counts, task_counts
// and guest_counts, the triggers that keep them exact on every insert, update and delete, and
// their backfill from the rows already there.
import { type Kysely, sql } from 'kysely';
import type { ColumnTypes, MigrationDef } from './helpers.js';

/**
 * One counts table: `n` rows of `table` per combination of the key columns. Each key is an
 * expression over the row (`new` or `old`); a nullable column is stored as '' for null, because a
 * primary key column cannot hold NULL portably. `watched` are the columns an UPDATE must touch for
 * the counts to be able to change, so updates of other columns (a message's touch of
 * last_message_at) skip the trigger.
 */
interface CountSpec {
  table: string;
  counts: string;
  keys: { col: string; expr: (row: string) => string }[];
  watched: string[];
}

const col = (name: string) => ({ col: name, expr: (row: string) => `${row}.${name}` });
const orEmpty = (name: string, key: string) => ({ col: key, expr: (row: string) => `coalesce(${row}.${name}, '')` });

const SPECS: CountSpec[] = [
  {
    table: 'conversations',
    counts: 'conversation_counts',
    keys: [col('status'), col('channel'), orEmpty('assignee', 'assignee_key')],
    watched: ['status', 'channel', 'assignee'],
  },
  {
    table: 'tasks',
    counts: 'task_counts',
    keys: [col('status'), col('priority'), col('department'), orEmpty('assignee', 'assignee_key')],
    watched: ['status', 'priority', 'department', 'assignee'],
  },
];

// biome-ignore lint/suspicious/noExplicitAny: migrations run before and outside the typed schema.
type AnyDb = Kysely<any>;
const run = (db: AnyDb, text: string) => sql.raw(text).execute(db);

async function createCounts(db: AnyDb, t: ColumnTypes, s: CountSpec): Promise<void> {
  const cols = s.keys.map((k) => k.col);
  let table = db.schema.createTable(s.counts);
  for (const c of cols) table = table.addColumn(c, 'text', (b) => b.notNull());
  await table
    .addColumn('n', 'bigint', (b) => b.notNull())
    .addPrimaryKeyConstraint(`${s.counts}_pk`, cols as never)
    .execute();

  const keyList = cols.join(', ');
  const values = (row: string) => s.keys.map((k) => k.expr(row)).join(', ');
  const matches = (row: string) => s.keys.map((k) => `${k.col} = ${k.expr(row)}`).join(' and ');
  const increment = (row: string, n: string) =>
    `insert into ${s.counts} (${keyList}, n) values (${values(row)}, 1)
       on conflict (${keyList}) do update set n = ${n} + 1;`;
  const decrement = (row: string) => `update ${s.counts} set n = n - 1 where ${matches(row)};`;

  // Triggers before the backfill: on PostgreSQL, CREATE TRIGGER locks the table against writes
  // until the migration commits, so no row can land between the backfill's count and the
  // trigger (on SQLite the migration's write transaction already excludes every writer).
  // Count rows that drop to 0 are kept: there are at most a few hundred keys, and deleting them
  // would cost every write a check.
  if (t.dialect === 'sqlite') {
    const changed = s.watched.map((c) => `old.${c} is not new.${c}`).join(' or ');
    await run(db, `create trigger ${s.counts}_ai after insert on ${s.table} begin ${increment('new', 'n')} end`);
    await run(db, `create trigger ${s.counts}_ad after delete on ${s.table} begin ${decrement('old')} end`);
    await run(
      db,
      `create trigger ${s.counts}_au after update of ${s.watched.join(', ')} on ${s.table}
         when ${changed} begin ${decrement('old')} ${increment('new', 'n')} end`,
    );
  } else {
    const changed = s.watched.map((c) => `old.${c} is distinct from new.${c}`).join(' or ');
    const tuple = (row: string) => `(${values(row)})`;
    // An update that moves a row between keys changes two count rows. Two such updates moving
    // rows in opposite directions would each lock one and wait for the other (a deadlock), so
    // both are locked first, in key order.
    await run(
      db,
      `create function ${s.counts}_trg() returns trigger language plpgsql as $$
       begin
         if tg_op = 'UPDATE' then
           perform 1 from ${s.counts} where (${keyList}) in (${tuple('old')}, ${tuple('new')})
             order by ${keyList} for update;
         end if;
         if tg_op in ('UPDATE', 'DELETE') then ${decrement('old')} end if;
         if tg_op in ('INSERT', 'UPDATE') then ${increment('new', `${s.counts}.n`)} end if;
         return null;
       end $$`,
    );
    await run(
      db,
      `create trigger ${s.counts}_aid after insert or delete on ${s.table}
         for each row execute function ${s.counts}_trg()`,
    );
    await run(
      db,
      `create trigger ${s.counts}_au after update of ${s.watched.join(', ')} on ${s.table}
         for each row when (${changed}) execute function ${s.counts}_trg()`,
    );
  }

  const grouped = s.keys.map((k) => k.expr(s.table)).join(', ');
  await run(
    db,
    `insert into ${s.counts} (${keyList}, n) select ${grouped}, count(*) from ${s.table} group by ${grouped}`,
  );
}

export const listCounts: MigrationDef = {
  name: '002-list-counts',
  async up(db, t) {
    for (const s of SPECS) await createCounts(db, t, s);

    // Guests have no filter the counts could key on except "none" (search and tag still count the
    // matching rows), so one row holds the total; id = 1 always.
    await db.schema
      .createTable('guest_counts')
      .addColumn('id', 'integer', (b) => b.primaryKey())
      .addColumn('n', 'bigint', (b) => b.notNull())
      .execute();
    if (t.dialect === 'sqlite') {
      await run(
        db,
        `create trigger guest_counts_ai after insert on guests begin update guest_counts set n = n + 1; end`,
      );
      await run(
        db,
        `create trigger guest_counts_ad after delete on guests begin update guest_counts set n = n - 1; end`,
      );
    } else {
      await run(
        db,
        `create function guest_counts_trg() returns trigger language plpgsql as $$
         begin
           update guest_counts set n = n + (case when tg_op = 'INSERT' then 1 else -1 end);
           return null;
         end $$`,
      );
      await run(
        db,
        `create trigger guest_counts_aid after insert or delete on guests
           for each row execute function guest_counts_trg()`,
      );
    }
    await run(db, `insert into guest_counts (id, n) select 1, count(*) from guests`);
  },
};
