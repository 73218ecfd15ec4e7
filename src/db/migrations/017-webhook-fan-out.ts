// Owns PostgreSQL's webhook fan-out inside `write_events` (migration 016): the deliveries of a
// commit's events are made from the webhooks table in the function itself, one for every active
// webhook subscribed to each event, instead of from a list the API read in a round trip before.
// A webhook created or switched off by a transaction that committed before the call is seen by it.
// Their ids come from `new_id(prefix, seq)`: a record id shaped as src/lib/ids.ts makes it
// (`<prefix>_<26 characters of Crockford's base 32>`: 48 bits of milliseconds first, so ids sort by
// time), then the row's place in the call, so a call's deliveries sort in their events' order (a
// delivery list is newest first by creation time, then id). The function now returns how many
// deliveries it made.
import { sql } from 'kysely';
import type { MigrationDef } from './helpers.js';

// The events lock's number, written in: a migration is frozen history and imports no live code, so
// it keeps the value EVENTS_LOCK (src/modules/events/outbox.ts) had when it was written. A test
// that holds EVENTS_LOCK and sees write_events wait (test/modules/events.test.ts) fails if they part.
const EVENTS_LOCK = 727_465_001;

export const webhookFanOut: MigrationDef = {
  name: '017-webhook-fan-out',
  async up(db, t) {
    if (t.dialect !== 'postgres') return;
    const run = (text: string) => sql.raw(text).execute(db);
    await run(FN);
    await run('drop function write_events(json, json, timestamptz)');
    // Events carry `rest` (their JSON after the id) unless they go to one webhook only (`only`,
    // a test delivery), whose row is in p_deliveries.
    await run(
      `create function write_events(p_events json, p_deliveries json, p_at timestamptz) returns integer
  language plpgsql volatile as $$
declare
  made integer;
begin
  perform pg_advisory_xact_lock(${EVENTS_LOCK});
  -- json_to_recordset yields the rows in the arrays' order: ids are drawn in that order.
  with e as materialized (
    select x.*, nextval(pg_get_serial_sequence('events', 'id')) as id
    from json_to_recordset(p_events) as x(ord integer, type text, actor_type text, actor_id text,
      conversation_id text, task_id text, assignee text, data text, changes text, rest text)
  ), ev as (
    insert into events (id, type, occurred_at, actor_type, actor_id, conversation_id, task_id, assignee, data, changes)
    select e.id, e.type, p_at, e.actor_type, e.actor_id, e.conversation_id, e.task_id, e.assignee, e.data, e.changes
    from e
  ), d as (
    select o.ord, o.id, o.webhook_id, o.event_type, o.rest
    from json_to_recordset(p_deliveries) as o(ord integer, id text, webhook_id text, event_type text, rest text)
    union all
    select e.ord, new_id('whd', (row_number() over (order by e.ord, w.id))::integer), w.id, e.type, e.rest
    from e join webhooks w on w.active and (w.events::jsonb ? '*' or w.events::jsonb ? e.type)
    where e.rest is not null
  )
  insert into webhook_deliveries (id, webhook_id, event_id, event_type, payload, status, attempts, next_attempt_at, created_at, updated_at)
  select d.id, d.webhook_id, e.id, d.event_type, '{"id":"' || e.id || '",' || d.rest, 'pending', 0, p_at, p_at, p_at
  from d join e on e.ord = d.ord;
  get diagnostics made = row_count;
  return made;
end $$`,
    );
  },
};

/**
 * `new_id(prefix, seq)`: the 48 bits of milliseconds, then `seq` in 10 bits (0–1023: the rows of
 * one call keep their order within a millisecond), then 70 random bits.
 */
const FN = `create function new_id(prefix text, seq integer) returns text language plpgsql volatile as $$
declare
  alphabet constant text := '0123456789abcdefghjkmnpqrstvwxyz';
  ms constant bigint := floor(extract(epoch from clock_timestamp()) * 1000)::bigint;
  -- A version 4 UUID: bytes 0-5 and 9-15 are random (6 holds the version, 8 the variant).
  r constant bytea := uuid_send(gen_random_uuid());
  hi constant bigint := (get_byte(r, 0)::bigint << 32) | (get_byte(r, 1)::bigint << 24)
    | (get_byte(r, 2)::bigint << 16) | (get_byte(r, 3)::bigint << 8) | get_byte(r, 4);
  lo constant bigint := (get_byte(r, 10)::bigint << 32) | (get_byte(r, 11)::bigint << 24)
    | (get_byte(r, 12)::bigint << 16) | (get_byte(r, 13)::bigint << 8) | get_byte(r, 14);
  out text := prefix || '_';
begin
  for i in reverse 9..0 loop
    out := out || substr(alphabet, ((ms >> (5 * i)) & 31)::int + 1, 1);
  end loop;
  for i in reverse 1..0 loop
    out := out || substr(alphabet, ((least(greatest(seq, 0), 1023) >> (5 * i)) & 31) + 1, 1);
  end loop;
  for i in reverse 5..0 loop
    out := out || substr(alphabet, ((hi >> (5 * i)) & 31)::int + 1, 1);
  end loop;
  for i in reverse 7..0 loop
    out := out || substr(alphabet, ((lo >> (5 * i)) & 31)::int + 1, 1);
  end loop;
  return out;
end $$`;
