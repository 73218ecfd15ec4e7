// Owns the tables reports are read from (docs/reports.md): report_facts, one row per measure that
// ended (a reply, a close, a completion, a creation …) with its wall and business seconds;
// report_rollups and report_bins, the same summed per UTC quarter-hour, hour and day for every
// combination of channel, assignee and department ('*' standing for all); and the running state
// of each conversation and task (waits, due times) that the next write continues from.
import { type CreateTableBuilder, sql } from 'kysely';
import type { MigrationDef } from './helpers.js';

export const reports: MigrationDef = {
  name: '025-reports',
  async up(db, t) {
    // SQLite: rows stored in primary-key order, so a report's range of one figure is one contiguous
    // read rather than an index walk plus a row lookup per entry.
    const clustered = <B extends CreateTableBuilder<string, never>>(b: B): B =>
      t.dialect === 'sqlite' ? (b.modifyEnd(sql`without rowid`) as B) : b;
    const real = t.dialect === 'postgres' ? 'double precision' : 'real';
    let facts = db.schema.createTable('report_facts');
    facts =
      t.dialect === 'sqlite'
        ? facts.addColumn('id', t.autoId, (c) => c.primaryKey().autoIncrement())
        : facts.addColumn('id', t.autoId, (c) => c.primaryKey());
    await facts
      .addColumn('metric', 'text', (c) => c.notNull())
      // Epoch milliseconds: range scans and bucket arithmetic alike on both stores.
      .addColumn('at', 'bigint', (c) => c.notNull())
      .addColumn('channel', 'text', (c) => c.notNull())
      .addColumn('assignee', 'text', (c) => c.notNull())
      .addColumn('department', 'text', (c) => c.notNull())
      .addColumn('wall', real)
      .addColumn('biz', real)
      .addColumn('ref', 'text')
      .execute();
    await db.schema.createIndex('report_facts_metric_at').on('report_facts').columns(['metric', 'at']).execute();
    await db.schema.createIndex('report_facts_ref').on('report_facts').columns(['ref', 'metric']).execute();

    await db.schema
      .createTable('report_rollups')
      .addColumn('metric', 'text', (c) => c.notNull())
      .addColumn('channel', 'text', (c) => c.notNull())
      .addColumn('assignee', 'text', (c) => c.notNull())
      .addColumn('department', 'text', (c) => c.notNull())
      .addColumn('grain', 'integer', (c) => c.notNull())
      .addColumn('start', 'bigint', (c) => c.notNull())
      .addColumn('n', 'bigint', (c) => c.notNull())
      .addColumn('wall', real, (c) => c.notNull())
      .addColumn('biz', real, (c) => c.notNull())
      .addPrimaryKeyConstraint('report_rollups_pk', ['metric', 'channel', 'assignee', 'department', 'grain', 'start'])
      .$call(clustered)
      .execute();

    await db.schema
      .createTable('report_bins')
      .addColumn('metric', 'text', (c) => c.notNull())
      .addColumn('biz', 'integer', (c) => c.notNull())
      .addColumn('channel', 'text', (c) => c.notNull())
      .addColumn('assignee', 'text', (c) => c.notNull())
      .addColumn('department', 'text', (c) => c.notNull())
      .addColumn('grain', 'integer', (c) => c.notNull())
      .addColumn('start', 'bigint', (c) => c.notNull())
      .addColumn('bin', 'integer', (c) => c.notNull())
      .addColumn('n', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('report_bins_pk', [
        'metric',
        'biz',
        'channel',
        'assignee',
        'department',
        'grain',
        'start',
        'bin',
      ])
      .$call(clustered)
      .execute();

    await db.schema
      .createTable('report_conversations')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('closed', 'integer', (c) => c.notNull())
      .addColumn('opened_at', 'bigint', (c) => c.notNull())
      .addColumn('wait_at', 'bigint')
      .addColumn('waited', 'integer', (c) => c.notNull())
      .execute();
    // A conversation's running SLA targets live in its row, so `?sla=` is an indexed read: the
    // response target (first or next) and resolution, each due and at-risk moment, and whether a
    // target was missed since it was last opened.
    for (const column of ['sla_response_due', 'sla_response_risk', 'sla_resolution_due', 'sla_resolution_risk']) {
      await db.schema.alterTable('conversations').addColumn(column, t.ts).execute();
    }
    await db.schema.alterTable('conversations').addColumn('sla_target', 'text').execute();
    await db.schema
      .alterTable('conversations')
      .addColumn('sla_breached', t.bool, (c) => c.notNull().defaultTo(t.dialect === 'postgres' ? false : 0))
      .execute();
    for (const column of ['sla_response_due', 'sla_response_risk', 'sla_resolution_due', 'sla_resolution_risk']) {
      await db.schema.createIndex(`conversations_${column}`).on('conversations').column(column).execute();
    }
    await db.schema.alterTable('tasks').addColumn('deadline', t.ts).execute();
    await db.schema.createIndex('tasks_deadline').on('tasks').column('deadline').execute();

    await db.schema
      .createTable('report_tasks')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('deadline', 'bigint')
      .addColumn('completed_at', 'bigint')
      .addColumn('status', 'text', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('report_tasks_deadline').on('report_tasks').column('deadline').execute();
  },
};
