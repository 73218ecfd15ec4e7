// Owns reading event rows: the feed page after a cursor (with the type and staff filters), the
// newest id, the purge of old events and finished deliveries, and the mapping to the API shape.
import { type Param, type Prepared, preparedPage } from '../../db/prepared.js';
import { toIso } from '../../db/store.js';
import type { EventRow, Executor } from '../../db/types.js';
import { eventJson } from './outbox.js';
import type { EventView } from './schemas.js';

const COLUMNS = ['id', 'type', 'occurred_at', 'actor_type', 'actor_id', 'assignee', 'data', 'changes'] as const;
export type EventListRow = Pick<EventRow, (typeof COLUMNS)[number]>;

export function toEventJson(row: EventListRow): string {
  return eventJson({
    id: row.id,
    type: row.type,
    occurredAt: toIso(row.occurred_at),
    actorType: row.actor_type,
    actorId: row.actor_id,
    data: row.data,
    changes: row.changes,
  });
}

export function toEvent(row: EventListRow): EventView {
  return JSON.parse(toEventJson(row)) as EventView;
}

export interface EventFilter {
  /** Events with a greater id. */
  after: number;
  types?: readonly string[];
  /** A staff-role reader: only events of conversations and tasks assigned to them. */
  assignee?: string;
  limit: number;
}

type FeedParams = { after: number; assignee: string; limit: number; offset: number } & Record<`t${number}`, string>;

/** One prepared feed query per shape: how many types it names, and whether a staff filter applies. */
const feeds = new Map<string, Prepared<FeedParams, EventListRow>>();

function feedQuery(typeCount: number, byAssignee: boolean) {
  const key = `${typeCount},${byAssignee}`;
  let q = feeds.get(key);
  if (q === undefined) {
    q = preparedPage((db, p: Param<FeedParams>) => {
      let b = db.selectFrom('events').select(COLUMNS).where('id', '>', p('after'));
      if (typeCount > 0) {
        b = b.where(
          'type',
          'in',
          Array.from({ length: typeCount }, (_, i) => p(`t${i}`)),
        );
      }
      if (byAssignee) b = b.where('assignee', '=', p('assignee'));
      return b.orderBy('id', 'asc');
    });
    feeds.set(key, q);
  }
  return q;
}

/** Oldest first after the cursor; the (assignee, id) and (type, id) indexes serve the filters. */
export function listEvents(db: Executor, f: EventFilter): Promise<EventListRow[]> {
  const types = f.types ?? [];
  const params: FeedParams = { after: f.after, assignee: f.assignee ?? '', limit: f.limit, offset: 0 };
  types.forEach((t, i) => {
    params[`t${i}`] = t;
  });
  return db.run(feedQuery(types.length, f.assignee !== undefined), params);
}

export async function maxEventId(db: Executor): Promise<number> {
  const row = await db
    .selectFrom('events')
    .select((eb) => eb.fn.max('id').as('max'))
    .executeTakeFirst();
  return row?.max == null ? 0 : Number(row.max);
}

/**
 * Deletes events that occurred before `before`, and deliveries that finished (succeeded or
 * failed) before it; pending deliveries stay until they finish. Returns the events deleted.
 */
export async function purgeBefore(db: Executor, before: Date): Promise<number> {
  const at = before.toISOString();
  const r = await db.deleteFrom('events').where('occurred_at', '<', at).executeTakeFirst();
  await db.deleteFrom('webhook_deliveries').where('status', '!=', 'pending').where('updated_at', '<', at).execute();
  return Number(r.numDeletedRows);
}
