// Owns the record of journey steps (docs/stays.md, Journeys): one row per stay and journey, the
// step's moment and what became of it (scheduled, done, skipped, failed), the message or task it
// made and why it was skipped or failed; and on stays the moments their status became in_house and
// checked_out, the events check_in and check_out steps are due from. The job that runs a step is
// keyed by stay and journey (src/modules/jobs/), so a step has at most one live job.
import { sql } from 'kysely';
import type { MigrationDef } from './helpers.js';

export const journeySteps: MigrationDef = {
  name: '031-journey-steps',
  async up(db, t) {
    await db.schema
      .createTable('journey_steps')
      .addColumn('stay_id', 'text', (c) => c.notNull().references('stays.id'))
      .addColumn('journey', 'text', (c) => c.notNull())
      .addColumn('event', 'text', (c) => c.notNull())
      .addColumn('due_at', t.ts, (c) => c.notNull())
      .addColumn('status', 'text', (c) => c.notNull().check(sql`status in ('scheduled', 'done', 'skipped', 'failed')`))
      .addColumn('message_id', 'text')
      .addColumn('task_id', 'text')
      .addColumn('reason', 'text')
      .addColumn('created_at', t.ts, (c) => c.notNull())
      .addColumn('updated_at', t.ts, (c) => c.notNull())
      .addPrimaryKeyConstraint('journey_steps_pk', ['stay_id', 'journey'])
      .execute();
    await db.schema.alterTable('stays').addColumn('checked_in_at', t.ts).execute();
    await db.schema.alterTable('stays').addColumn('checked_out_at', t.ts).execute();
  },
};
