// Owns attachments: one row per file a message carries or an upload waiting to be used. The
// content itself lives in the attachment store (a folder or a bucket), named by its sha256, so a
// file sent many times is kept once; a row is the file as one message (or upload) knows it.
import { sql } from 'kysely';
import type { MigrationDef } from './helpers.js';

export const attachments: MigrationDef = {
  name: '027-attachments',
  async up(db, t) {
    await db.schema
      .createTable('attachments')
      .addColumn('id', 'text', (c) => c.primaryKey())
      // Null while an upload waits for a message; set with message_id when a message takes it.
      .addColumn('conversation_id', 'text', (c) => c.references('conversations.id').onDelete('cascade'))
      .addColumn('message_id', 'text', (c) => c.references('messages.id').onDelete('cascade'))
      .addColumn('position', 'integer', (c) => c.notNull().defaultTo(0))
      // upload: POSTed to /attachments; inbound: arrived with a guest's message, fetched after commit.
      .addColumn('source', 'text', (c) => c.notNull())
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('filename', 'text', (c) => c.notNull())
      .addColumn('content_type', 'text')
      .addColumn('size', 'bigint')
      .addColumn('sha256', 'text')
      .addColumn('error_code', 'text')
      .addColumn('error_message', 'text')
      // How to fetch an inbound file: { provider, url | mediaId, contentType }; never a credential.
      .addColumn('origin', t.json)
      .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
      // The staff member or API key that uploaded it (who may use it before a message does).
      .addColumn('created_by', 'text')
      .addColumn('created_at', t.ts, (c) => c.notNull())
      .addColumn('updated_at', t.ts, (c) => c.notNull())
      .execute();
    await db.schema.createIndex('attachments_message').on('attachments').columns(['message_id', 'position']).execute();
    // The sweep of uploads no message took, oldest first.
    await db.schema
      .createIndex('attachments_unused')
      .on('attachments')
      .columns(['created_at'])
      .where(sql.ref('message_id'), 'is', null)
      .execute();
    // Whether any row still names a content before it is deleted from the store.
    await db.schema.createIndex('attachments_sha256').on('attachments').column('sha256').execute();
  },
};
