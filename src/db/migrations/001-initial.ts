// Owns the first schema: a table for every resource of the specification, with its keys,
// unique constraints and an index behind each filter + order pair the API offers.
import { sql } from 'kysely';
import type { MigrationDef } from './helpers.js';

export const initial: MigrationDef = {
  name: '001-initial',
  async up(db, t) {
    await db.schema
      .createTable('staff')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('email', 'text', (c) => c.notNull())
      .addColumn('email_lower', 'text', (c) => c.notNull().unique())
      .addColumn('role', 'text', (c) => c.notNull().check(sql`role in ('admin', 'manager', 'staff')`))
      .addColumn('department', 'text')
      .addColumn('active', t.bool, (c) => c.notNull())
      .addColumn('password_hash', 'text', (c) => c.notNull())
      .addColumn('tokens_valid_after', 'bigint', (c) => c.notNull().defaultTo(0))
      .addColumn('created_at', t.ts, (c) => c.notNull())
      .addColumn('updated_at', t.ts, (c) => c.notNull())
      .execute();
    await db.schema.createIndex('staff_name_idx').on('staff').columns(['name', 'id']).execute();
    await db.schema.createIndex('staff_role_idx').on('staff').columns(['role', 'name', 'id']).execute();

    await db.schema
      .createTable('guests')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('email', 'text')
      .addColumn('email_lower', 'text', (c) => c.unique())
      .addColumn('phone', 'text', (c) => c.unique())
      .addColumn('tags', t.json, (c) => c.notNull())
      .addColumn('notes', 'text')
      .addColumn('search_text', 'text', (c) => c.notNull())
      .addColumn('created_at', t.ts, (c) => c.notNull())
      .addColumn('updated_at', t.ts, (c) => c.notNull())
      .execute();

    await db.schema.createIndex('guests_recent_idx').on('guests').columns(['created_at', 'id']).execute();

    await db.schema
      .createTable('guest_tags')
      .addColumn('guest_id', 'text', (c) => c.notNull().references('guests.id').onDelete('cascade'))
      .addColumn('tag', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint('guest_tags_pk', ['guest_id', 'tag'])
      .execute();
    await db.schema.createIndex('guest_tags_tag_idx').on('guest_tags').columns(['tag', 'guest_id']).execute();

    await db.schema
      .createTable('conversations')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('guest_id', 'text', (c) => c.notNull().references('guests.id'))
      .addColumn('channel', 'text', (c) => c.notNull().check(sql`channel in ('whatsapp', 'sms', 'email', 'web')`))
      .addColumn('status', 'text', (c) => c.notNull().check(sql`status in ('open', 'closed', 'pending')`))
      .addColumn('assignee', 'text', (c) => c.references('staff.id'))
      .addColumn('subject', 'text')
      .addColumn('last_message_at', t.ts, (c) => c.notNull())
      .addColumn('message_count', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('created_at', t.ts, (c) => c.notNull())
      .addColumn('updated_at', t.ts, (c) => c.notNull())
      .execute();
    // Lists order by last_message_at desc, id desc; each filter gets its own leading column.
    const cnv = (name: string, cols: string[]) =>
      db.schema
        .createIndex(name)
        .on('conversations')
        .columns([...cols, 'last_message_at', 'id'])
        .execute();
    await cnv('conversations_recent_idx', []);
    await cnv('conversations_status_idx', ['status']);
    await cnv('conversations_channel_idx', ['channel']);
    await cnv('conversations_assignee_idx', ['assignee']);
    await cnv('conversations_assignee_status_idx', ['assignee', 'status']);
    await db.schema.createIndex('conversations_guest_idx').on('conversations').columns(['guest_id']).execute();

    await db.schema
      .createTable('messages')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('conversation_id', 'text', (c) => c.notNull().references('conversations.id').onDelete('cascade'))
      .addColumn('direction', 'text', (c) => c.notNull().check(sql`direction in ('inbound', 'outbound')`))
      .addColumn('type', 'text', (c) => c.notNull().check(sql`type in ('text', 'note')`))
      .addColumn('content', 'text', (c) => c.notNull())
      .addColumn('sender_type', 'text', (c) => c.notNull().check(sql`sender_type in ('guest', 'staff', 'system')`))
      .addColumn('sender_id', 'text')
      .addColumn('delivery_status', 'text', (c) =>
        c.notNull().check(sql`delivery_status in ('received', 'queued', 'sent', 'delivered', 'failed')`),
      )
      .addColumn('created_at', t.ts, (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex('messages_conversation_idx')
      .on('messages')
      .columns(['conversation_id', 'created_at', 'id'])
      .execute();

    await db.schema
      .createTable('tasks')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('title', 'text', (c) => c.notNull())
      .addColumn('description', 'text')
      .addColumn('department', 'text', (c) => c.notNull())
      .addColumn('priority', 'text', (c) => c.notNull().check(sql`priority in ('low', 'normal', 'high', 'urgent')`))
      .addColumn('status', 'text', (c) =>
        c.notNull().check(sql`status in ('open', 'in_progress', 'completed', 'cancelled')`),
      )
      .addColumn('guest_id', 'text', (c) => c.references('guests.id'))
      .addColumn('conversation_id', 'text', (c) => c.references('conversations.id'))
      .addColumn('assignee', 'text', (c) => c.references('staff.id'))
      .addColumn('notes', 'text')
      .addColumn('due_at', t.ts)
      .addColumn('completed_at', t.ts)
      .addColumn('created_at', t.ts, (c) => c.notNull())
      .addColumn('updated_at', t.ts, (c) => c.notNull())
      .execute();
    // Lists order by created_at desc, id desc.
    const tsk = (name: string, cols: string[]) =>
      db.schema
        .createIndex(name)
        .on('tasks')
        .columns([...cols, 'created_at', 'id'])
        .execute();
    await tsk('tasks_recent_idx', []);
    await tsk('tasks_status_idx', ['status']);
    await tsk('tasks_priority_idx', ['priority']);
    await tsk('tasks_department_idx', ['department']);
    await tsk('tasks_assignee_idx', ['assignee']);
    await db.schema.createIndex('tasks_guest_idx').on('tasks').columns(['guest_id']).execute();
    await db.schema.createIndex('tasks_conversation_idx').on('tasks').columns(['conversation_id']).execute();

    await db.schema
      .createTable('knowledge_entries')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('title', 'text', (c) => c.notNull())
      .addColumn('content', 'text', (c) => c.notNull())
      .addColumn('category', 'text', (c) => c.notNull())
      .addColumn('created_at', t.ts, (c) => c.notNull())
      .addColumn('updated_at', t.ts, (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex('knowledge_category_idx')
      .on('knowledge_entries')
      .columns(['category', 'title', 'id'])
      .execute();
    await db.schema.createIndex('knowledge_title_idx').on('knowledge_entries').columns(['title', 'id']).execute();
    if (t.dialect === 'postgres') {
      await sql`alter table knowledge_entries add column search tsvector generated always as
        (setweight(to_tsvector('english', title), 'A') || setweight(to_tsvector('english', content), 'B')) stored`.execute(
        db,
      );
      await sql`create index knowledge_search_idx on knowledge_entries using gin (search)`.execute(db);
    } else {
      await sql`create virtual table knowledge_fts using fts5(title, content, content='knowledge_entries',
        content_rowid='rowid', tokenize='porter unicode61')`.execute(db);
      await sql`create trigger knowledge_fts_ai after insert on knowledge_entries begin
        insert into knowledge_fts(rowid, title, content) values (new.rowid, new.title, new.content); end`.execute(db);
      await sql`create trigger knowledge_fts_ad after delete on knowledge_entries begin
        insert into knowledge_fts(knowledge_fts, rowid, title, content) values ('delete', old.rowid, old.title, old.content); end`.execute(
        db,
      );
      await sql`create trigger knowledge_fts_au after update on knowledge_entries begin
        insert into knowledge_fts(knowledge_fts, rowid, title, content) values ('delete', old.rowid, old.title, old.content);
        insert into knowledge_fts(rowid, title, content) values (new.rowid, new.title, new.content); end`.execute(db);
    }

    await db.schema
      .createTable('settings')
      .addColumn('key', 'text', (c) => c.primaryKey())
      .addColumn('value', t.json, (c) => c.notNull())
      .addColumn('updated_at', t.ts, (c) => c.notNull())
      .addColumn('updated_by', 'text', (c) => c.references('staff.id'))
      .execute();

    await db.schema
      .createTable('revoked_tokens')
      .addColumn('jti', 'text', (c) => c.primaryKey())
      .addColumn('expires_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('revoked_tokens_expiry_idx').on('revoked_tokens').column('expires_at').execute();
  },
};
