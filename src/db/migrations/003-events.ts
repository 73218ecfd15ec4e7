// Owns the schema of events and webhooks: the outbox of changes (read by the feed, the live
// stream and the webhook fan-out), webhook endpoints, and one delivery row per event and endpoint.
import { sql } from 'kysely';
import type { MigrationDef } from './helpers.js';

export const events: MigrationDef = {
  name: '003-events',
  async up(db, t) {
    // The id is the feed cursor: never reused (AUTOINCREMENT / bigserial), so a purge cannot make
    // a later event take an id a reader has already passed.
    await db.schema
      .createTable('events')
      .addColumn('id', t.autoId, (c) => (t.dialect === 'sqlite' ? c.primaryKey().autoIncrement() : c.primaryKey()))
      .addColumn('type', 'text', (c) => c.notNull())
      .addColumn('occurred_at', t.ts, (c) => c.notNull())
      .addColumn('actor_type', 'text', (c) => c.notNull().check(sql`actor_type in ('staff', 'system', 'guest')`))
      .addColumn('actor_id', 'text')
      // What a staff-role reader may see is decided from these, not from the JSON: the assignee of
      // the conversation or task at the time of the event.
      .addColumn('conversation_id', 'text')
      .addColumn('task_id', 'text')
      .addColumn('assignee', 'text')
      // Text on both stores, not jsonb: the payload is sent as stored, key order included.
      .addColumn('data', 'text', (c) => c.notNull())
      .addColumn('changes', 'text')
      .execute();
    await db.schema.createIndex('events_assignee_idx').on('events').columns(['assignee', 'id']).execute();
    await db.schema.createIndex('events_type_idx').on('events').columns(['type', 'id']).execute();
    await db.schema.createIndex('events_occurred_idx').on('events').columns(['occurred_at']).execute();

    await db.schema
      .createTable('webhooks')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('url', 'text', (c) => c.notNull())
      .addColumn('events', 'text', (c) => c.notNull())
      .addColumn('description', 'text')
      .addColumn('active', t.bool, (c) => c.notNull())
      // Kept as given: signing needs the secret itself, so it cannot be hashed like a password.
      .addColumn('secret', 'text', (c) => c.notNull())
      .addColumn('consecutive_failures', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('created_at', t.ts, (c) => c.notNull())
      .addColumn('updated_at', t.ts, (c) => c.notNull())
      .execute();

    await db.schema
      .createTable('webhook_deliveries')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('webhook_id', 'text', (c) => c.notNull().references('webhooks.id').onDelete('cascade'))
      // No foreign key to events: deliveries keep their own copy of the payload and outlive a purge.
      .addColumn('event_id', 'bigint', (c) => c.notNull())
      .addColumn('event_type', 'text', (c) => c.notNull())
      .addColumn('payload', 'text', (c) => c.notNull())
      .addColumn('status', 'text', (c) => c.notNull().check(sql`status in ('pending', 'succeeded', 'failed')`))
      .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('last_response_code', 'integer')
      .addColumn('last_error', 'text')
      .addColumn('duration_ms', 'integer')
      .addColumn('next_attempt_at', t.ts)
      .addColumn('last_attempt_at', t.ts)
      .addColumn('locked_until', t.ts)
      .addColumn('locked_by', 'text')
      .addColumn('created_at', t.ts, (c) => c.notNull())
      .addColumn('updated_at', t.ts, (c) => c.notNull())
      .execute();
    // The dispatcher's question: what is due now.
    await db.schema
      .createIndex('webhook_deliveries_due_idx')
      .on('webhook_deliveries')
      .columns(['status', 'next_attempt_at'])
      .execute();
    // Per-endpoint order (the oldest pending delivery of a webhook) and the status filter of its list.
    await db.schema
      .createIndex('webhook_deliveries_webhook_idx')
      .on('webhook_deliveries')
      .columns(['webhook_id', 'status', 'event_id', 'id'])
      .execute();
    await db.schema
      .createIndex('webhook_deliveries_recent_idx')
      .on('webhook_deliveries')
      .columns(['webhook_id', 'created_at', 'id'])
      .execute();
  },
};
