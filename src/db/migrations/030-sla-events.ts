// Owns what the SLA event jobs remember (docs/reports.md, "SLA events"): per conversation, the
// latest SLA moment already reported and the moments that came but whose target ended (a reply, a
// close) before they were reported; per task, the deadline already reported overdue. A job that
// runs again (a retry, a second instance, a restart) reads them and writes no event twice.
import type { MigrationDef } from './helpers.js';

export const slaEvents: MigrationDef = {
  name: '030-sla-events',
  async up(db) {
    // Milliseconds since the epoch, as the other report_* moments (migration 025).
    await db.schema.alterTable('report_conversations').addColumn('sla_reported', 'bigint').execute();
    // A JSON array of moments ({ kind, target, at, dueAt }), null when none is owed.
    await db.schema.alterTable('report_conversations').addColumn('sla_owed', 'text').execute();
    await db.schema.alterTable('report_tasks').addColumn('overdue_reported', 'bigint').execute();
  },
};
