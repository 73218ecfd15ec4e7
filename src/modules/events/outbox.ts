// Owns the transactional outbox: a write path runs in `withEvents`, adds the events of its change,
// and they are written in the same transaction as the change, with one pending delivery for every
// active webhook subscribed to them. After the commit, listeners (stream pollers, dispatcher,
// Redis fan-out) are told that new events exist.
import { CompiledQuery, type Insertable } from 'kysely';
import { type Param, prepared } from '../../db/prepared.js';
import { type Store, toBool, toIso, toJson } from '../../db/store.js';
import type { EventTable, Tx } from '../../db/types.js';
import { newId } from '../../lib/ids.js';
import { insertDelivery } from '../webhooks/deliveries-repository.js';
import type { Actor, Changes, EventType } from './schemas.js';

export interface NewEvent {
  type: EventType;
  actor: Actor;
  /** The record after the change, in its API shape. */
  data: unknown;
  /** For updates only. */
  changes?: Changes;
  conversationId?: string | null;
  taskId?: string | null;
  /** Assignee of the conversation or task after the change: the staff member who may read it. */
  assignee?: string | null;
  /** Deliver to this webhook only, as this delivery id (webhook.test), instead of the fan-out. */
  only?: { webhookId: string; deliveryId: string };
}

export interface Outbox {
  add(event: NewEvent): void;
}

// Arbitrary, fixed: the advisory lock that orders event commits on PostgreSQL (see writeEvents).
// Migrations 016 and 017 write this number into write_events; change it only with a migration that
// defines that function again.
export const EVENTS_LOCK = 727_465_001;

/**
 * Runs `work` in one transaction of the store (`store.transact`) and writes the events it added at
 * its end, inside the same transaction; once it has committed, `store.eventsCommitted` tells the
 * stream pollers, the dispatcher and the Redis fan-out. Events are written last on purpose: on
 * PostgreSQL the write takes the events lock, and holding it while waiting for row locks could
 * deadlock with another writer.
 */
export function withEvents<T>(store: Store, work: (tx: Tx, outbox: Outbox) => Promise<T>): Promise<T> {
  return store.transact(async (tx) => {
    const pending: NewEvent[] = [];
    const out = await work(tx, { add: (e) => pending.push(e) });
    if (pending.length > 0) {
      const written = await writeEvents(tx, pending);
      tx.onCommit(() => store.eventsCommitted.emit({ deliveries: written.deliveries }));
    }
    return out;
  });
}

/** The JSON of an event exactly as the feed, the stream and webhooks show it. */
export function eventJson(e: {
  id: number | string;
  type: string;
  occurredAt: string;
  actorType: string;
  actorId: string | null;
  data: string;
  changes: string | null;
}): string {
  const head = JSON.stringify({
    id: String(e.id),
    type: e.type,
    occurredAt: e.occurredAt,
    actor: { type: e.actorType, id: e.actorId },
  });
  // The stored JSON is spliced in rather than parsed and re-serialized: one encoding everywhere.
  const tail = `,"data":${e.data}${e.changes === null ? '' : `,"changes":${e.changes}`}}`;
  return head.slice(0, -1) + tail;
}

const activeWebhooks = prepared((db, _p: Param<Record<string, never>>) =>
  db.selectFrom('webhooks').select(['id', 'events']).where('active', '=', toBool(true)),
);

type EventInsert = Omit<Insertable<EventTable>, 'id'>;

/** An event's row, each value a placeholder. */
const eventRow = (p: Param<Required<EventInsert>>) => ({
  type: p('type'),
  occurred_at: p('occurred_at'),
  actor_type: p('actor_type'),
  actor_id: p('actor_id'),
  conversation_id: p('conversation_id'),
  task_id: p('task_id'),
  assignee: p('assignee'),
  data: p('data'),
  changes: p('changes'),
});

const insertEvent = prepared((db, p: Param<Required<EventInsert>>) =>
  db.insertInto('events').values(eventRow(p)).returning('id'),
);

type Hook = { id: string; events: string[] };

/**
 * Inserts the events and their deliveries. On PostgreSQL ids come from a sequence, so without care
 * a transaction could commit id 11 before another commits id 10, and a reader at cursor 11 would
 * never see 10: there event-writing transactions draw their ids and commit one at a time, in id
 * order (writeEventsPg). SQLite has one writer at a time and needs nothing.
 */
async function writeEvents(tx: Tx, events: NewEvent[]): Promise<Written> {
  const occurredAt = new Date().toISOString();
  if (tx.dialect === 'postgres') return writeEventsPg(tx, events, occurredAt);
  const hooks = (await tx.run(activeWebhooks, {})).map((h) => hookOf(h.id, h.events));
  let deliveries = 0;
  for (const e of events) {
    const { columns, json } = encoded(e, occurredAt);
    const [row] = await tx.run(insertEvent, { ...columns, occurred_at: occurredAt });
    const eventId = Number(row!.id);
    const targets = targetsOf(e, hooks);
    const payload = targets.length > 0 ? json(eventId) : '';
    for (const t of targets) {
      await insertDelivery(tx, { id: t.deliveryId, webhookId: t.webhookId, eventId, eventType: e.type, payload });
    }
    deliveries += targets.length;
  }
  return { deliveries };
}

/** How many webhook deliveries the events made: on PostgreSQL known once the call has run. */
interface Written {
  deliveries: number;
}

/** An event's stored columns, and its JSON as the feed shows it once its id is known. */
function encoded(e: NewEvent, occurredAt: string) {
  const data = toJson(e.data);
  const changes = e.changes === undefined ? null : toJson(e.changes);
  const json = (id: number) =>
    eventJson({
      id,
      type: e.type,
      occurredAt: toIso(occurredAt),
      actorType: e.actor.type,
      actorId: e.actor.id,
      data,
      changes,
    });
  // The event's row as stored, all but its id and time.
  const columns = {
    type: e.type,
    actor_type: e.actor.type,
    actor_id: e.actor.id,
    conversation_id: e.conversationId ?? null,
    task_id: e.taskId ?? null,
    assignee: e.assignee ?? null,
    data,
    changes,
  };
  return { columns, json };
}

/** The webhooks an event goes to, each with its delivery's id. */
function targetsOf(e: NewEvent, hooks: Hook[]): { webhookId: string; deliveryId: string }[] {
  if (e.only) return [{ webhookId: e.only.webhookId, deliveryId: e.only.deliveryId }];
  return hooks
    .filter((h) => h.events.includes('*') || h.events.includes(e.type))
    .map((h) => ({ webhookId: h.id, deliveryId: newId('whd') }));
}

/** What eventJson writes before the rest of an event whose id is 0: the SQL below puts the id there. */
const ID_HEAD = '{"id":"0",';

/**
 * PostgreSQL: every event of the transaction and every delivery in one call of `write_events`
 * (migrations 016, 017), which takes a transaction-scoped advisory lock (EVENTS_LOCK) before it
 * draws the ids; the lock is held to COMMIT, so event-writing transactions commit one at a time in
 * id order. The call is the transaction's last statement and is sent with its COMMIT in one round
 * trip (`tx.withCommit`): the lock is then held only while PostgreSQL runs it and commits, never
 * while a reply travels to a busy API process and its next statement back. Inside a request
 * transaction (an Idempotency-Key, an If-Match) it runs at once instead, and the lock lasts to
 * that commit. The function makes the deliveries from the webhooks table itself (no round trip
 * reads them first), so each event carries its JSON; an event for one webhook only (`only`, a test
 * delivery) carries its delivery row instead.
 */
async function writeEventsPg(tx: Tx, events: NewEvent[], occurredAt: string): Promise<Written> {
  const eventRows: string[] = [];
  const onlyRows: string[] = [];
  for (const [i, e] of events.entries()) {
    const { columns, json } = encoded(e, occurredAt);
    const rest = json(0).slice(ID_HEAD.length);
    eventRows.push(JSON.stringify({ ord: i, ...columns, rest: e.only ? null : rest }));
    if (e.only) {
      onlyRows.push(
        JSON.stringify({ ord: i, id: e.only.deliveryId, webhook_id: e.only.webhookId, event_type: e.type, rest }),
      );
    }
  }
  const text = 'select write_events($1::json, $2::json, $3::timestamptz) as deliveries';
  const params = [`[${eventRows.join(',')}]`, `[${onlyRows.join(',')}]`, occurredAt];
  const written: Written = { deliveries: 0 };
  const read = (rows: Record<string, unknown>[]) => {
    written.deliveries = Number(rows[0]?.deliveries ?? 0);
  };
  if (tx.withCommit !== undefined) tx.withCommit(text, params, read);
  else read((await tx.executeQuery<Record<string, unknown>>(CompiledQuery.raw(text, params))).rows);
  return written;
}

const hookOf = (id: string, events: string): Hook => ({ id, events: JSON.parse(events) as string[] });
