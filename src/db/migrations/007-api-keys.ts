// Owns the schema of API keys (docs/integrations.md): one row per key, its secret kept only as a keyed hash
// (and, during a rotation's grace period, the previous secret's hash until it ends), and events
// that may name a key as their actor.
import { type Kysely, sql } from 'kysely';
import type { ColumnTypes, MigrationDef } from './helpers.js';

// biome-ignore lint/suspicious/noExplicitAny: migrations run before and outside the typed schema.
type AnyDb = Kysely<any>;

const ACTOR_TYPES = `actor_type in ('staff', 'system', 'guest', 'api_key')`;

/**
 * Widens the events' actor_type check to allow api_key. PostgreSQL alters the constraint; SQLite
 * cannot, so the table is rebuilt with its rows, indexes and AUTOINCREMENT sequence (event ids are
 * feed cursors and must never be reused, so the sequence is carried over, not recomputed).
 */
async function widenEventActors(db: AnyDb, t: ColumnTypes) {
  if (t.dialect === 'postgres') {
    await sql.raw('alter table events drop constraint if exists events_actor_type_check').execute(db);
    await sql.raw(`alter table events add constraint events_actor_type_check check (${ACTOR_TYPES})`).execute(db);
    return;
  }
  const seq = await sql<{ seq: number }>`select seq from sqlite_sequence where name = 'events'`.execute(db);
  await sql
    .raw(
      `create table events_new (
        id integer primary key autoincrement,
        type text not null,
        occurred_at text not null,
        actor_type text not null check (${ACTOR_TYPES}),
        actor_id text,
        conversation_id text,
        task_id text,
        assignee text,
        data text not null,
        changes text
      )`,
    )
    .execute(db);
  await sql
    .raw(
      'insert into events_new select id, type, occurred_at, actor_type, actor_id, conversation_id, task_id, assignee, data, changes from events',
    )
    .execute(db);
  await sql.raw('drop table events').execute(db);
  await sql.raw('alter table events_new rename to events').execute(db);
  const last = seq.rows[0]?.seq;
  if (last !== undefined) {
    await sql`delete from sqlite_sequence where name = 'events'`.execute(db);
    await sql`insert into sqlite_sequence (name, seq) values ('events', ${last})`.execute(db);
  }
  await sql.raw('create index events_assignee_idx on events (assignee, id)').execute(db);
  await sql.raw('create index events_type_idx on events (type, id)').execute(db);
  await sql.raw('create index events_occurred_idx on events (occurred_at)').execute(db);
}

export const apiKeys: MigrationDef = {
  name: '007-api-keys',
  async up(db, t) {
    await db.schema
      .createTable('api_keys')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('name', 'text', (c) => c.notNull())
      // JSON text: the scopes, sorted.
      .addColumn('scopes', 'text', (c) => c.notNull())
      // HMAC-SHA256 of the secret (base64url); the secret itself is shown once and never stored.
      .addColumn('secret_hash', 'text', (c) => c.notNull())
      // During a rotation's grace period: the replaced secret's hash and when it stops working.
      .addColumn('previous_hash', 'text')
      .addColumn('previous_expires_at', t.ts)
      .addColumn('expires_at', t.ts)
      .addColumn('last_used_at', t.ts)
      .addColumn('revoked_at', t.ts)
      .addColumn('created_by', 'text')
      .addColumn('created_at', t.ts, (c) => c.notNull())
      .addColumn('updated_at', t.ts, (c) => c.notNull())
      .execute();
    await db.schema.createIndex('api_keys_created_idx').on('api_keys').columns(['created_at', 'id']).execute();
    await widenEventActors(db, t);
  },
};
