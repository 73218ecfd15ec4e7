import { sql } from 'kysely';
import { paginate } from '../../db/paginate.js';
import { chosenOnce, nowIso, toBool, toIso } from '../../db/store.js';
import type { Executor, WebhookDeliveryRow } from '../../db/types.js';
import type { DeliveryStatus, DeliveryView } from './schemas.js';

const COLUMNS = [
  'id',
  'webhook_id',
  'event_id',
  'event_type',
  'status',
  'attempts',
  'last_response_code',
  'last_error',
  'duration_ms',
  'next_attempt_at',
  'last_attempt_at',
  'created_at',
  'updated_at',
] as const;
type DeliveryListRow = Pick<WebhookDeliveryRow, (typeof COLUMNS)[number]>;

const isoOrNull = (v: string | Date | null) => (v === null ? null : toIso(v));

export function toDelivery(row: DeliveryListRow): DeliveryView {
  return {
    id: row.id,
    webhookId: row.webhook_id,
    eventId: String(row.event_id),
    eventType: row.event_type as DeliveryView['eventType'],
    status: row.status,
    attempts: Number(row.attempts),
    lastResponseCode: row.last_response_code === null ? null : Number(row.last_response_code),
    lastError: row.last_error,
    durationMs: row.duration_ms === null ? null : Number(row.duration_ms),
    nextAttemptAt: isoOrNull(row.next_attempt_at),
    lastAttemptAt: isoOrNull(row.last_attempt_at),
    createdAt: toIso(row.created_at),
    updatedAt: toIso(row.updated_at),
  };
}

export async function insertDelivery(
  db: Executor,
  d: { id: string; webhookId: string; eventId: number; eventType: string; payload: string },
): Promise<void> {
  const now = nowIso();
  await db
    .insertInto('webhook_deliveries')
    .values({
      id: d.id,
      webhook_id: d.webhookId,
      event_id: d.eventId,
      event_type: d.eventType,
      payload: d.payload,
      status: 'pending',
      attempts: 0,
      next_attempt_at: now,
      created_at: now,
      updated_at: now,
    })
    .execute();
}

export async function findDelivery(db: Executor, webhookId: string, id: string) {
  const row = await db
    .selectFrom('webhook_deliveries')
    .select(COLUMNS)
    .where('id', '=', id)
    .where('webhook_id', '=', webhookId)
    .executeTakeFirst();
  return row && toDelivery(row);
}

export interface DeliveryFilter {
  webhookId: string;
  status?: DeliveryStatus;
}

/** A webhook's deliveries, newest first. */
export const listDeliveries = paginate<DeliveryFilter, DeliveryListRow>({
  name: 'deliveries',
  from: (db) => db.selectFrom('webhook_deliveries'),
  where(q, f, p) {
    q = q.where('webhook_id', '=', p('webhookId'));
    return f.status === undefined ? q : q.where('status', '=', p('status'));
  },
  columns: (q) => q.select(COLUMNS),
  order: ['created_at', 'id'],
  direction: 'desc',
  keyOf: (row) => [toIso(row.created_at), row.id],
  count(x, f, p) {
    const q = x
      .selectFrom('webhook_deliveries')
      .where('webhook_id', '=', p('webhookId'))
      .select((eb) => eb.fn.countAll<number>().as('n'));
    return f.status === undefined ? q : q.where('status', '=', p('status'));
  },
  shapeOf: (f) => String(f.status !== undefined),
  values: (f) => ({ webhookId: f.webhookId, status: f.status }),
});

/**
 * Makes a delivery due now (a redelivery); its attempts keep counting. False when an attempt holds
 * it (claimed and not yet expired), so it is never sent twice at once.
 */
export async function scheduleNow(db: Executor, id: string): Promise<boolean> {
  const now = nowIso();
  const r = await db
    .updateTable('webhook_deliveries')
    .set({ status: 'pending', next_attempt_at: now, updated_at: now })
    .where('id', '=', id)
    .where((eb) => eb.or([eb('locked_until', 'is', null), eb('locked_until', '<', now)]))
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

export interface ClaimedDelivery {
  id: string;
  webhookId: string;
  attempts: number;
  payload: string;
}

/**
 * Deliveries that may be attempted once due: pending, of an active webhook, not claimed by a live
 * instance, and the oldest pending one of their webhook, so an endpoint never gets an event while
 * an older one for it is still pending (in flight or waiting for a retry).
 */
function claimable(db: Executor, at: string) {
  return db
    .selectFrom('webhook_deliveries as d')
    .innerJoin('webhooks as w', 'w.id', 'd.webhook_id')
    .where('d.status', '=', 'pending')
    .where('w.active', '=', toBool(true))
    .where((eb) => eb.or([eb('d.locked_until', 'is', null), eb('d.locked_until', '<', at)]))
    .where((eb) =>
      eb.not(
        eb.exists(
          eb
            .selectFrom('webhook_deliveries as o')
            .select('o.id')
            .whereRef('o.webhook_id', '=', 'd.webhook_id')
            .where('o.status', '=', 'pending')
            // A row-value comparison is a range of the webhook's index (webhook, status, event,
            // id): one step finds an earlier delivery or none, as the send claim does
            // (src/modules/channels/sends-repository.ts). The same test written with OR read every
            // pending delivery of the webhook for its oldest one.
            .where(sql<boolean>`(o.event_id, o.id) < (d.event_id, d.id)`),
        ),
      ),
    );
}

/**
 * Locks up to `limit` claimable deliveries that are due for this instance until `lockMs` from now.
 * On PostgreSQL the candidates are selected FOR UPDATE SKIP LOCKED, so concurrent instances claim
 * disjoint rows (and a row another instance just claimed is re-checked and dropped); on SQLite
 * the single statement runs alone.
 */
export async function claimDue(
  db: Executor,
  instance: string,
  limit: number,
  lockMs: number,
): Promise<ClaimedDelivery[]> {
  const now = new Date();
  const at = now.toISOString();
  let candidates = claimable(db, at)
    .select('d.id')
    .where('d.next_attempt_at', '<=', at)
    .orderBy('d.next_attempt_at')
    .limit(limit);
  if (db.dialect === 'postgres') candidates = candidates.forUpdate('d').skipLocked();
  const rows = await db
    .updateTable('webhook_deliveries')
    .set({ locked_until: new Date(now.getTime() + lockMs).toISOString(), locked_by: instance })
    .where(chosenOnce(db, 'id', candidates))
    .returning(['id', 'webhook_id', 'attempts', 'payload'])
    .execute();
  return rows.map((r) => ({ id: r.id, webhookId: r.webhook_id, attempts: Number(r.attempts), payload: r.payload }));
}

/** When the next claimable delivery falls due (epoch ms), or null when there is none. */
export async function nextDueAt(db: Executor): Promise<number | null> {
  const row = await claimable(db, new Date().toISOString())
    .select((eb) => eb.fn.min('d.next_attempt_at').as('at'))
    .executeTakeFirst();
  return row?.at == null ? null : new Date(toIso(row.at)).getTime();
}

export interface AttemptOutcome {
  status: DeliveryStatus;
  responseCode: number | null;
  error: string | null;
  durationMs: number;
  nextAttemptAt: string | null;
}

/** Records an attempt made under this instance's lock; false if the lock was lost meanwhile. */
export async function recordAttempt(db: Executor, id: string, instance: string, o: AttemptOutcome): Promise<boolean> {
  const now = nowIso();
  const r = await db
    .updateTable('webhook_deliveries')
    .set((eb) => ({
      status: o.status,
      attempts: eb('attempts', '+', 1),
      last_response_code: o.responseCode,
      last_error: o.error,
      duration_ms: o.durationMs,
      next_attempt_at: o.nextAttemptAt,
      last_attempt_at: now,
      locked_until: null,
      locked_by: null,
      updated_at: now,
    }))
    .where('id', '=', id)
    .where('locked_by', '=', instance)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

/** Gives up this instance's locks at shutdown, so a restarted or other instance resumes at once. */
export async function releaseLocks(db: Executor, instance: string, ids: string[]): Promise<void> {
  if (ids.length === 0) return;
  await db
    .updateTable('webhook_deliveries')
    .set({ locked_until: null, locked_by: null })
    .where('locked_by', '=', instance)
    .where('id', 'in', ids)
    .execute();
}
