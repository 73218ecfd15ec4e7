// Owns when the lists' kept counts (migrations 002 and 013) are written on PostgreSQL: at commit,
// not at the row's write. A count row is shared by every transaction writing a row of its key (a
// burst of new conversations all land in open, sms, unassigned), and a trigger that ran with the
// insert held that count row's lock for the rest of the transaction: concurrent writers of one key
// took turns for their whole length (docs/stays.md, At scale). As deferred constraint triggers the
// same functions run when the transaction commits, so the lock is held only while it commits. A
// transaction writing events commits under the events lock already (src/modules/events/outbox.ts),
// so those transactions add their counts one after another and never wait on each other's count
// rows. Each trigger event keeps the row as it was at that write (its old and new values), so a row
// inserted and updated in one transaction still adds up. Nothing reads a total inside the
// transaction that changed it. SQLite has one writer at a time: its triggers stay as they were.
import { type Kysely, sql } from 'kysely';
import type { MigrationDef } from './helpers.js';

// biome-ignore lint/suspicious/noExplicitAny: migrations run before and outside the typed schema.
type AnyDb = Kysely<any>;
const run = (db: AnyDb, text: string) => sql.raw(text).execute(db);

interface Counted {
  table: string;
  counts: string;
  /** The columns an UPDATE must change for its counts to move (migration 002); none: no update trigger. */
  watched: string[];
}

const COUNTED: Counted[] = [
  { table: 'conversations', counts: 'conversation_counts', watched: ['status', 'channel', 'assignee'] },
  { table: 'tasks', counts: 'task_counts', watched: ['status', 'priority', 'department', 'assignee'] },
  { table: 'guests', counts: 'guest_counts', watched: [] },
];

export const deferredCounts: MigrationDef = {
  name: '032-deferred-counts',
  async up(db, t) {
    if (t.dialect !== 'postgres') return;
    for (const c of COUNTED) {
      await run(db, `drop trigger ${c.counts}_aid on ${c.table}`);
      await run(
        db,
        `create constraint trigger ${c.counts}_aid after insert or delete on ${c.table}
           deferrable initially deferred
           for each row execute function ${c.counts}_trg()`,
      );
      if (c.watched.length === 0) continue;
      const changed = c.watched.map((w) => `old.${w} is distinct from new.${w}`).join(' or ');
      await run(db, `drop trigger ${c.counts}_au on ${c.table}`);
      await run(
        db,
        `create constraint trigger ${c.counts}_au after update of ${c.watched.join(', ')} on ${c.table}
           deferrable initially deferred
           for each row when (${changed}) execute function ${c.counts}_trg()`,
      );
    }
  },
};
