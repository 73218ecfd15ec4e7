// Owns the schema of the audit log (docs/integrations.md): one row per security-relevant action, kept 365
// days and never editable: the store itself refuses an UPDATE, and a DELETE of a row younger than
// 365 days (only the retention purge deletes).
import { sql } from 'kysely';
import type { MigrationDef } from './helpers.js';

export const auditLog: MigrationDef = {
  name: '009-audit-log',
  async up(db, t) {
    await db.schema
      .createTable('audit_log')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('action', 'text', (c) => c.notNull())
      .addColumn('actor_type', 'text')
      .addColumn('actor_id', 'text')
      .addColumn('target_type', 'text')
      .addColumn('target_id', 'text')
      .addColumn('ip', 'text')
      .addColumn('user_agent', 'text')
      .addColumn('request_id', 'text')
      .addColumn('created_at', t.ts, (c) => c.notNull())
      .execute();
    await db.schema.createIndex('audit_log_created_idx').on('audit_log').columns(['created_at', 'id']).execute();
    await db.schema
      .createIndex('audit_log_action_idx')
      .on('audit_log')
      .columns(['action', 'created_at', 'id'])
      .execute();
    await db.schema
      .createIndex('audit_log_actor_idx')
      .on('audit_log')
      .columns(['actor_id', 'created_at', 'id'])
      .execute();
    if (t.dialect === 'sqlite') {
      await sql`create trigger audit_log_no_update before update on audit_log
        begin select raise(abort, 'the audit log is append-only'); end`.execute(db);
      await sql`create trigger audit_log_no_early_delete before delete on audit_log
        when old.created_at > strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-365 days')
        begin select raise(abort, 'audit entries are kept 365 days'); end`.execute(db);
    } else {
      await sql`create function audit_log_guard() returns trigger language plpgsql as $$
        begin
          if tg_op = 'UPDATE' then raise exception 'the audit log is append-only'; end if;
          if old.created_at > now() - interval '365 days' then
            raise exception 'audit entries are kept 365 days';
          end if;
          return old;
        end $$`.execute(db);
      await sql`create trigger audit_log_guard before update or delete on audit_log
        for each row execute function audit_log_guard()`.execute(db);
    }
  },
};
