// Owns the schema of channel delivery: a message's delivery state (provider id, error, the times
// it was sent / delivered / read, `read` as a status, an API key as a sender), the key that stores a provider's inbound
// message once, and the send jobs the channel dispatcher claims.
import { sql } from 'kysely';
import type { MigrationDef } from './helpers.js';

const STATUSES = sql`delivery_status in ('received', 'queued', 'sent', 'delivered', 'read', 'failed')`;
// A message an integration sends with an API key names the key as its sender.
const SENDERS = sql`sender_type in ('guest', 'staff', 'system', 'api_key')`;

export const channels: MigrationDef = {
  name: '006-channels',
  async up(db, t) {
    if (t.dialect === 'postgres') {
      await sql`alter table messages drop constraint if exists messages_delivery_status_check`.execute(db);
      await sql`alter table messages add constraint messages_delivery_status_check check (${STATUSES})`.execute(db);
      await sql`alter table messages drop constraint if exists messages_sender_type_check`.execute(db);
      await sql`alter table messages add constraint messages_sender_type_check check (${SENDERS})`.execute(db);
    } else {
      // SQLite cannot alter a CHECK: the table is rebuilt (nothing references messages, no triggers).
      await db.schema
        .createTable('messages_v5')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('conversation_id', 'text', (c) => c.notNull().references('conversations.id').onDelete('cascade'))
        .addColumn('direction', 'text', (c) => c.notNull().check(sql`direction in ('inbound', 'outbound')`))
        .addColumn('type', 'text', (c) => c.notNull().check(sql`type in ('text', 'note')`))
        .addColumn('content', 'text', (c) => c.notNull())
        .addColumn('sender_type', 'text', (c) => c.notNull().check(SENDERS))
        .addColumn('sender_id', 'text')
        .addColumn('delivery_status', 'text', (c) => c.notNull().check(STATUSES))
        .addColumn('created_at', t.ts, (c) => c.notNull())
        .execute();
      await sql`insert into messages_v5 select id, conversation_id, direction, type, content, sender_type, sender_id, delivery_status, created_at from messages`.execute(
        db,
      );
      await db.schema.dropTable('messages').execute();
      await sql`alter table messages_v5 rename to messages`.execute(db);
      await db.schema
        .createIndex('messages_conversation_idx')
        .on('messages')
        .columns(['conversation_id', 'created_at', 'id'])
        .execute();
    }
    await db.schema.alterTable('messages').addColumn('external_id', 'text').execute();
    for (const [name, type] of [
      ['error_code', 'text'],
      ['error_message', 'text'],
      ['sent_at', t.ts],
      ['delivered_at', t.ts],
      ['read_at', t.ts],
      // `<channel>:<provider id>`: a provider repeating an inbound message or a status finds it here.
      ['provider_key', 'text'],
      ['updated_at', t.ts],
    ] as const) {
      await db.schema.alterTable('messages').addColumn(name, type).execute();
    }
    await db.schema.createIndex('messages_provider_key_idx').on('messages').column('provider_key').unique().execute();
    // A provider's status callback names the message by the id the provider gave it.
    await db.schema.createIndex('messages_external_id_idx').on('messages').column('external_id').execute();

    await db.schema
      .createTable('channel_sends')
      .addColumn('message_id', 'text', (c) => c.primaryKey().references('messages.id').onDelete('cascade'))
      .addColumn('conversation_id', 'text', (c) => c.notNull())
      .addColumn('status', 'text', (c) => c.notNull().check(sql`status in ('pending', 'done')`))
      .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('next_attempt_at', t.ts)
      .addColumn('locked_until', t.ts)
      .addColumn('locked_by', 'text')
      // A template message: { name, language, parameters } as JSON (Meta sends it by name).
      .addColumn('template', 'text')
      .addColumn('created_at', t.ts, (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex('channel_sends_due_idx')
      .on('channel_sends')
      .columns(['status', 'next_attempt_at'])
      .execute();
    // Order per conversation: the oldest pending send of a conversation goes first.
    await db.schema
      .createIndex('channel_sends_conversation_idx')
      .on('channel_sends')
      .columns(['conversation_id', 'status', 'created_at', 'message_id'])
      .execute();
  },
};
