// Owns the jobs table (src/modules/jobs/): work written in the transaction of the change that wants
// it, due at a time, claimed under a lease by one instance at a time; and conversations'
// snoozed_until, the moment a snoozed conversation is woken by one of those jobs.
import { sql } from 'kysely';
import type { MigrationDef } from './helpers.js';

export const jobs: MigrationDef = {
  name: '024-jobs',
  async up(db, t) {
    await db.schema
      .createTable('jobs')
      .addColumn('id', t.autoId, (c) => (t.dialect === 'sqlite' ? c.primaryKey().autoIncrement() : c.primaryKey()))
      .addColumn('kind', 'text', (c) => c.notNull())
      .addColumn('key', 'text')
      .addColumn('payload', 'text', (c) => c.notNull())
      // pending (due or running under a lease), done, failed (attempts used up) or cancelled.
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('run_at', t.ts, (c) => c.notNull())
      .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
      // Bumped by every reschedule: a run claimed before it finishes without marking the job done.
      .addColumn('version', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('locked_by', 'text')
      .addColumn('locked_until', t.ts)
      .addColumn('last_error', 'text')
      .addColumn('created_at', t.ts, (c) => c.notNull())
      .addColumn('updated_at', t.ts, (c) => c.notNull())
      .addColumn('finished_at', t.ts)
      .execute();
    // One live job per kind and key: a caller schedules "once per target" by naming it.
    await db.schema
      .createIndex('jobs_live_key')
      .on('jobs')
      .columns(['kind', 'key'])
      .unique()
      .where(sql.ref('status'), '=', 'pending')
      .execute();
    // The claim and the timer walk pending jobs by due time only; finished ones are not in it.
    await db.schema
      .createIndex('jobs_due')
      .on('jobs')
      .columns(['run_at', 'id'])
      .where(sql.ref('status'), '=', 'pending')
      .execute();
    await db.schema
      .createIndex('jobs_finished')
      .on('jobs')
      .column('finished_at')
      .where(sql.ref('status'), '<>', 'pending')
      .execute();
    await db.schema.alterTable('conversations').addColumn('snoozed_until', t.ts).execute();
  },
};
