// Owns the transactional outbox: a write path runs in `withEvents`, adds the events of its change,
// and they are written in the same transaction as the change, with one pending delivery for every
// active webhook subscribed to them. After the commit, listeners (stream pollers, dispatcher,
// Redis fan-out) are told that new events exist.
import { type Insertable, sql } from 'kysely';
import { type Param, prepared } from '../../db/prepared.js';
import { type Store, toBool, toIso, toJson } from '../../db/store.js';
import type { EventTable, Executor, Tx } from '../../db/types.js';
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
      const deliveries = await writeEvents(tx, pending);
      tx.onCommit(() => store.eventsCommitted.emit({ deliveries }));
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

/**
 * The first event of a transaction on PostgreSQL: its id is drawn only once the transaction holds
 * the events lock, in the same statement, which also answers the active webhooks (see writeEvents).
 */
const insertFirstEventLocked = prepared((db, p: Param<Required<EventInsert>>) =>
  db
    .insertInto('events')
    .values({
      id: sql<number>`(select nextval(pg_get_serial_sequence('events', 'id')) from (select pg_advisory_xact_lock(${sql.lit(EVENTS_LOCK)})) as events_lock)`,
      ...eventRow(p),
    })
    .returning([
      'id',
      sql<string>`(select coalesce(json_agg(json_build_array(w.id, w.events)), '[]')::text from webhooks w where w.active)`.as(
        'hooks',
      ),
    ]),
);

type Hook = { id: string; events: string[] };

/**
 * Inserts the events and their deliveries. On PostgreSQL ids come from a sequence, so without care
 * a transaction could commit id 11 before another commits id 10, and a reader at cursor 11 would
 * never see 10. A transaction-scoped advisory lock makes event-writing transactions draw their ids
 * and commit one at a time, in id order; SQLite has one writer at a time and needs nothing. The
 * lock is held from the first event's insert to COMMIT, so that is kept short: it is taken inside
 * the first insert, before that insert draws its id, and the same statement reads the webhooks
 * (a separate statement would cost the transaction, and the lock's holder, one more round trip).
 */
async function writeEvents(tx: Executor, events: NewEvent[]): Promise<number> {
  const pg = tx.dialect === 'postgres';
  let hooks: Hook[] = pg ? [] : (await tx.run(activeWebhooks, {})).map((h) => hookOf(h.id, h.events));
  const occurredAt = new Date().toISOString();
  let deliveries = 0;
  for (const [i, e] of events.entries()) {
    const data = toJson(e.data);
    const changes = e.changes === undefined ? null : toJson(e.changes);
    const values = {
      type: e.type,
      occurred_at: occurredAt,
      actor_type: e.actor.type,
      actor_id: e.actor.id,
      conversation_id: e.conversationId ?? null,
      task_id: e.taskId ?? null,
      assignee: e.assignee ?? null,
      data,
      changes,
    };
    let eventId: number;
    if (i === 0 && pg) {
      const [row] = await tx.run(insertFirstEventLocked, values);
      eventId = Number(row!.id);
      hooks = (JSON.parse(row!.hooks) as [string, string][]).map(([id, events]) => hookOf(id, events));
    } else {
      const [row] = await tx.run(insertEvent, values);
      eventId = Number(row!.id);
    }
    const payload = eventJson({
      id: eventId,
      type: e.type,
      occurredAt: toIso(occurredAt),
      actorType: e.actor.type,
      actorId: e.actor.id,
      data,
      changes,
    });
    const targets = e.only
      ? [{ webhookId: e.only.webhookId, deliveryId: e.only.deliveryId }]
      : hooks
          .filter((h) => h.events.includes('*') || h.events.includes(e.type))
          .map((h) => ({ webhookId: h.id, deliveryId: newId('whd') }));
    for (const t of targets) {
      await insertDelivery(tx, { id: t.deliveryId, webhookId: t.webhookId, eventId, eventType: e.type, payload });
    }
    deliveries += targets.length;
  }
  return deliveries;
}

const hookOf = (id: string, events: string): Hook => ({ id, events: JSON.parse(events) as string[] });
