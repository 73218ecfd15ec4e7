// Owns `write_events`, PostgreSQL's writer of a transaction's events and webhook deliveries
// (src/modules/events/outbox.ts writeEventsPg). The write travels with its transaction's COMMIT as
// one simple query, its values written in as literals (the events lock is then held only while
// PostgreSQL runs it and commits), so as a statement of its own it was parsed and planned again on
// every commit. In a function its statements are planned once per connection, and each commit
// sends a one-line call with the events and deliveries as two JSON arrays.
//
// The lock comes first, then every id is drawn, in the order of the events array: event-writing
// transactions commit one at a time in id order (docs/events.md).
import { sql } from 'kysely';
import type { MigrationDef } from './helpers.js';

// The events lock's number, written in: a migration is frozen history and imports no live code, so
// it keeps the value EVENTS_LOCK (src/modules/events/outbox.ts) had when it was written. A test
// that holds EVENTS_LOCK and sees write_events wait (test/modules/events.test.ts) fails if they part.
const EVENTS_LOCK = 727_465_001;

export const writeEventsFunction: MigrationDef = {
  name: '016-write-events',
  async up(db, t) {
    if (t.dialect !== 'postgres') return;
    await sql
      .raw(
        `create function write_events(p_events json, p_deliveries json, p_at timestamptz) returns void
  language plpgsql volatile as $$
begin
  perform pg_advisory_xact_lock(${EVENTS_LOCK});
  -- json_to_recordset yields the rows in the arrays' order: ids are drawn in that order.
  with e as materialized (
    select x.*, nextval(pg_get_serial_sequence('events', 'id')) as id
    from json_to_recordset(p_events) as x(ord integer, type text, actor_type text, actor_id text,
      conversation_id text, task_id text, assignee text, data text, changes text)
  ), ev as (
    insert into events (id, type, occurred_at, actor_type, actor_id, conversation_id, task_id, assignee, data, changes)
    select e.id, e.type, p_at, e.actor_type, e.actor_id, e.conversation_id, e.task_id, e.assignee, e.data, e.changes
    from e
  )
  insert into webhook_deliveries (id, webhook_id, event_id, event_type, payload, status, attempts, next_attempt_at, created_at, updated_at)
  select d.id, d.webhook_id, e.id, d.event_type, '{"id":"' || e.id || '",' || d.rest, 'pending', 0, p_at, p_at, p_at
  from json_to_recordset(p_deliveries) as d(ord integer, id text, webhook_id text, event_type text, rest text)
  join e on e.ord = d.ord;
end $$`,
      )
      .execute(db);
  },
};
