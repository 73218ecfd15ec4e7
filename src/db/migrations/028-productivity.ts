// Owns the tables of staff productivity (docs/productivity.md): canned responses with their
// full-text index, and conversation labels.
//
// Labels are stored twice: as `conversations.labels` (the API's array, in the order given) and as
// one conversation_labels row per label, which carries a copy of the conversation's list columns
// (last_message_at, status, channel, assignee). A label's conversations, latest activity first,
// are then a range of the (label, last_message_at, conversation_id) index in the list's own
// order, filtered on the row itself, so a page reads that range up to its offset and the
// conversation rows of the page alone, at any table size. A trigger on conversations keeps the
// copies in step (a message moves last_message_at; a PATCH the status or assignee); for a
// conversation without labels that is one probe of an empty index range.
// conversation_label_counts holds, per label and (status, channel, assignee), how many
// conversations carry it, so a label's total is a sum of a few rows, as conversation_counts does
// for the list without a label (migrations 002, 013: slots on PostgreSQL).
import { type Kysely, sql } from 'kysely';
import type { MigrationDef } from './helpers.js';

// biome-ignore lint/suspicious/noExplicitAny: migrations run before and outside the typed schema.
type AnyDb = Kysely<any>;
const run = (db: AnyDb, text: string) => sql.raw(text).execute(db);

const SLOTS = 4;
const KEYS = 'label, status, channel, assignee_key';
const keyOf = (row: string) => `${row}.label, ${row}.status, ${row}.channel, coalesce(${row}.assignee, '')`;
const add = (row: string, delta: number, slot: string) =>
  `insert into conversation_label_counts (${KEYS}, slot, n) values (${keyOf(row)}, ${slot}, ${delta})
     on conflict (${KEYS}, slot) do update set n = conversation_label_counts.n + excluded.n;`;

async function cannedResponses(db: AnyDb, t: Parameters<MigrationDef['up']>[1]) {
  await db.schema
    .createTable('canned_responses')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('shortcode', 'text', (c) => c.notNull().unique())
    .addColumn('title', 'text', (c) => c.notNull())
    .addColumn('content', 'text', (c) => c.notNull())
    .addColumn('created_at', t.ts, (c) => c.notNull())
    .addColumn('updated_at', t.ts, (c) => c.notNull())
    .execute();
  // Same engines and weights as the knowledge base (migration 001), so a search means the same.
  if (t.dialect === 'postgres') {
    await run(
      db,
      `alter table canned_responses add column search tsvector generated always as
        (setweight(to_tsvector('english', shortcode || ' ' || title), 'A') ||
         setweight(to_tsvector('english', content), 'B')) stored`,
    );
    await run(db, 'create index canned_responses_search_idx on canned_responses using gin (search)');
    return;
  }
  await run(
    db,
    `create virtual table canned_fts using fts5(shortcode, title, content, content='canned_responses',
      content_rowid='rowid', tokenize='porter unicode61')`,
  );
  const row = (r: string) => `${r}.rowid, ${r}.shortcode, ${r}.title, ${r}.content`;
  const remove = `insert into canned_fts(canned_fts, rowid, shortcode, title, content) values ('delete', ${row('old')});`;
  const insert = `insert into canned_fts(rowid, shortcode, title, content) values (${row('new')});`;
  await run(db, `create trigger canned_fts_ai after insert on canned_responses begin ${insert} end`);
  await run(db, `create trigger canned_fts_ad after delete on canned_responses begin ${remove} end`);
  await run(db, `create trigger canned_fts_au after update on canned_responses begin ${remove} ${insert} end`);
}

async function labels(db: AnyDb, t: Parameters<MigrationDef['up']>[1]) {
  await db.schema
    .alterTable('conversations')
    .addColumn('labels', t.json, (c) => c.notNull().defaultTo(t.dialect === 'postgres' ? sql`'[]'::jsonb` : '[]'))
    .execute();
  await db.schema
    .createTable('conversation_labels')
    .addColumn('conversation_id', 'text', (c) => c.notNull().references('conversations.id').onDelete('cascade'))
    .addColumn('label', 'text', (c) => c.notNull())
    .addColumn('last_message_at', t.ts, (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('channel', 'text', (c) => c.notNull())
    .addColumn('assignee', 'text')
    .addPrimaryKeyConstraint('conversation_labels_pk', ['conversation_id', 'label'])
    .execute();
  await run(
    db,
    'create index conversation_labels_order_idx on conversation_labels (label, last_message_at, conversation_id)',
  );
  await db.schema
    .createTable('conversation_label_counts')
    .addColumn('label', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('channel', 'text', (c) => c.notNull())
    .addColumn('assignee_key', 'text', (c) => c.notNull())
    .addColumn('slot', 'smallint', (c) => c.notNull())
    .addColumn('n', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('conversation_label_counts_pk', ['label', 'status', 'channel', 'assignee_key', 'slot'])
    .execute();

  const copy = `update conversation_labels set last_message_at = new.last_message_at, status = new.status,
      channel = new.channel, assignee = new.assignee where conversation_id = new.id;`;
  if (t.dialect === 'sqlite') {
    await run(
      db,
      `create trigger conversation_labels_copy after update of last_message_at, status, channel, assignee on conversations
         begin ${copy} end`,
    );
    await run(
      db,
      `create trigger conversation_label_counts_ai after insert on conversation_labels begin ${add('new', 1, '0')} end`,
    );
    await run(
      db,
      `create trigger conversation_label_counts_ad after delete on conversation_labels begin ${add('old', -1, '0')} end`,
    );
    await run(
      db,
      `create trigger conversation_label_counts_au after update of status, channel, assignee on conversation_labels
         when old.status is not new.status or old.channel is not new.channel or old.assignee is not new.assignee
         begin ${add('old', -1, '0')} ${add('new', 1, '0')} end`,
    );
    return;
  }
  await run(
    db,
    `create function conversation_labels_copy_trg() returns trigger language plpgsql as $$
     begin ${copy} return null; end $$`,
  );
  await run(
    db,
    `create trigger conversation_labels_copy after update on conversations for each row
       when (old.last_message_at is distinct from new.last_message_at or old.status is distinct from new.status
         or old.channel is distinct from new.channel or old.assignee is distinct from new.assignee)
       execute function conversation_labels_copy_trg()`,
  );
  // A move between keys changes the lower key first, as migration 013 does, so two moves in
  // opposite directions cannot deadlock.
  const tuple = (row: string) => `(${keyOf(row)})`;
  await run(
    db,
    `create function conversation_label_counts_trg() returns trigger language plpgsql as $$
     declare s smallint := floor(random() * ${SLOTS});
     begin
       if tg_op = 'INSERT' then ${add('new', 1, 's')}
       elsif tg_op = 'DELETE' then ${add('old', -1, 's')}
       elsif ${tuple('old')} < ${tuple('new')} then ${add('old', -1, 's')} ${add('new', 1, 's')}
       else ${add('new', 1, 's')} ${add('old', -1, 's')}
       end if;
       return null;
     end $$`,
  );
  await run(
    db,
    `create trigger conversation_label_counts_aid after insert or delete on conversation_labels
       for each row execute function conversation_label_counts_trg()`,
  );
  await run(
    db,
    `create trigger conversation_label_counts_au after update on conversation_labels for each row
       when (old.status is distinct from new.status or old.channel is distinct from new.channel
         or old.assignee is distinct from new.assignee)
       execute function conversation_label_counts_trg()`,
  );
}

export const productivity: MigrationDef = {
  name: '028-productivity',
  async up(db, t) {
    await cannedResponses(db, t);
    await labels(db, t);
  },
};
