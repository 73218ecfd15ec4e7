// Owns webhook endpoint rows: reads, writes, the signing secret (read only by the dispatcher and
// shown once by the routes), the owning API key, the failure count, turning endpoints off, and the
// mapping of a row to its API shape.
import { randomBytes } from 'node:crypto';
import { paginate } from '../../db/paginate.js';
import { nowIso, toBool, toIso, toJson } from '../../db/store.js';
import type { Executor, WebhookRow } from '../../db/types.js';
import { newId } from '../../lib/ids.js';
import type { WebhookView } from './schemas.js';

const COLUMNS = [
  'id',
  'url',
  'events',
  'description',
  'active',
  'consecutive_failures',
  'api_key_id',
  'created_at',
  'updated_at',
] as const;
type WebhookListRow = Pick<WebhookRow, (typeof COLUMNS)[number]>;

export function toWebhook(row: WebhookListRow): WebhookView {
  return {
    id: row.id,
    url: row.url,
    events: JSON.parse(row.events) as WebhookView['events'],
    description: row.description,
    active: Boolean(row.active),
    consecutiveFailures: Number(row.consecutive_failures),
    apiKeyId: row.api_key_id,
    createdAt: toIso(row.created_at),
    updatedAt: toIso(row.updated_at),
  };
}

/** 32 random bytes; the prefix tells a leaked secret apart from other credentials in a scan. */
export const newSecret = (): string => `whsec_${randomBytes(32).toString('base64url')}`;

export async function findWebhook(db: Executor, id: string): Promise<WebhookView | undefined> {
  const row = await db.selectFrom('webhooks').select(COLUMNS).where('id', '=', id).executeTakeFirst();
  return row && toWebhook(row);
}

/**
 * What an attempt needs, and whether the owning API key (if any) is revoked or when it expires; the
 * secret never leaves the dispatcher.
 */
export function findTargets(db: Executor, ids: string[]) {
  return db
    .selectFrom('webhooks as w')
    .leftJoin('api_keys as k', 'k.id', 'w.api_key_id')
    .select(['w.id', 'w.url', 'w.secret', 'w.active', 'k.revoked_at as keyRevokedAt', 'k.expires_at as keyExpiresAt'])
    .where('w.id', 'in', ids)
    .execute();
}
export type Target = Awaited<ReturnType<typeof findTargets>>[number];

/** Whether a target's owning key was revoked or has expired at `nowMs` (false without an owner). */
export const ownerLapsed = (t: Pick<Target, 'keyRevokedAt' | 'keyExpiresAt'>, nowMs: number): boolean =>
  t.keyRevokedAt !== null || (t.keyExpiresAt !== null && Date.parse(toIso(t.keyExpiresAt)) <= nowMs);

/** Webhooks, newest first. */
export const listWebhooks = paginate<Record<string, never>, WebhookListRow>({
  name: 'webhooks',
  from: (db) => db.selectFrom('webhooks'),
  where: (q) => q,
  columns: (q) => q.select(COLUMNS),
  order: ['created_at', 'id'],
  direction: 'desc',
  keyOf: (row) => [toIso(row.created_at), row.id],
  count: (x) => x.selectFrom('webhooks').select((eb) => eb.fn.countAll<number>().as('n')),
  shapeOf: () => '',
  values: () => ({}),
});

export interface WebhookInput {
  url: string;
  events: string[];
  description: string | null;
  active: boolean;
  /** The API key that owns it; null: none (staff made it, or an admin took it over). */
  apiKeyId: string | null;
}

export async function insertWebhook(db: Executor, input: WebhookInput): Promise<{ view: WebhookView; secret: string }> {
  const now = nowIso();
  const row = {
    id: newId('whk'),
    url: input.url,
    events: toJson(input.events),
    description: input.description,
    active: toBool(input.active),
    secret: newSecret(),
    consecutive_failures: 0,
    api_key_id: input.apiKeyId,
    created_at: now,
    updated_at: now,
  };
  await db.insertInto('webhooks').values(row).execute();
  return { view: toWebhook(row), secret: row.secret };
}

export async function updateWebhook(
  db: Executor,
  id: string,
  c: Partial<WebhookInput>,
): Promise<WebhookView | undefined> {
  const r = await db
    .updateTable('webhooks')
    .set({
      ...(c.url !== undefined && { url: c.url }),
      ...(c.events !== undefined && { events: toJson(c.events) }),
      ...(c.description !== undefined && { description: c.description }),
      ...(c.active !== undefined && { active: toBool(c.active) }),
      ...(c.apiKeyId !== undefined && { api_key_id: c.apiKeyId }),
      // Turning an endpoint back on starts its failure count afresh, or it would be disabled again
      // by its very next failure.
      ...(c.active === true && { consecutive_failures: 0 }),
      updated_at: nowIso(),
    })
    .where('id', '=', id)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0 ? findWebhook(db, id) : undefined;
}

export async function rotateSecret(db: Executor, id: string): Promise<string | undefined> {
  const secret = newSecret();
  const r = await db
    .updateTable('webhooks')
    .set({ secret, updated_at: nowIso() })
    .where('id', '=', id)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0 ? secret : undefined;
}

/** Deletes the endpoint and, by cascade, its deliveries. */
export async function deleteWebhook(db: Executor, id: string): Promise<boolean> {
  const r = await db.deleteFrom('webhooks').where('id', '=', id).executeTakeFirst();
  return Number(r.numDeletedRows) > 0;
}

/** Turns the endpoint off; answers it when this call did (it was active). */
export async function deactivateWebhook(db: Executor, id: string): Promise<WebhookView | undefined> {
  const r = await db
    .updateTable('webhooks')
    .set({ active: toBool(false), updated_at: nowIso() })
    .where('id', '=', id)
    .where('active', '=', toBool(true))
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0 ? findWebhook(db, id) : undefined;
}

/** Turns off every active endpoint the API key owns (its revocation); answers them. */
export async function deactivateOwnedBy(db: Executor, apiKeyId: string): Promise<WebhookView[]> {
  const ids = await db
    .updateTable('webhooks')
    .set({ active: toBool(false), updated_at: nowIso() })
    .where('api_key_id', '=', apiKeyId)
    .where('active', '=', toBool(true))
    .returning('id')
    .execute();
  if (ids.length === 0) return [];
  const rows = await db
    .selectFrom('webhooks')
    .select(COLUMNS)
    .where(
      'id',
      'in',
      ids.map((r) => r.id),
    )
    .orderBy('id')
    .execute();
  return rows.map(toWebhook);
}

export async function resetFailures(db: Executor, id: string): Promise<void> {
  await db
    .updateTable('webhooks')
    .set({ consecutive_failures: 0 })
    .where('id', '=', id)
    .where('consecutive_failures', '>', 0)
    .execute();
}

/**
 * Counts one more failed attempt and, when the count reaches `threshold`, deactivates the endpoint.
 * Returns the endpoint when this call deactivated it (the caller writes webhook.disabled).
 */
export async function countFailure(db: Executor, id: string, threshold: number): Promise<WebhookView | undefined> {
  await db
    .updateTable('webhooks')
    .set((eb) => ({ consecutive_failures: eb('consecutive_failures', '+', 1) }))
    .where('id', '=', id)
    .execute();
  const r = await db
    .updateTable('webhooks')
    .set({ active: toBool(false), updated_at: nowIso() })
    .where('id', '=', id)
    .where('active', '=', toBool(true))
    .where('consecutive_failures', '>=', threshold)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0 ? findWebhook(db, id) : undefined;
}
