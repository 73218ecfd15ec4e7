// Owns the rules of webhook endpoints: an events list is ["*"] or specific types, a URL must pass
// the address guard (checked before any transaction opens: a DNS answer may take seconds, and a
// transaction on SQLite holds the only writer), a missing endpoint is a 404, an inactive one takes
// no test or redelivery, an endpoint belongs to the API key that created or last changed it (an
// admin turning it on takes it over), and the dispatcher is woken when deliveries become due.
// Every change is one transaction with its audit entry and its event (webhook.created, .updated,
// .deleted: the endpoint without its secret).
import type { Store } from '../../db/store.js';
import type { AuthUser } from '../../lib/auth.js';
import { conflict, fieldError, notFound } from '../../lib/errors.js';
import { newId } from '../../lib/ids.js';
import type { AuditTrail } from '../audit/trail.js';
import { changesOf, staffActor } from '../events/emit.js';
import { withEvents } from '../events/outbox.js';
import { findDelivery, scheduleNow } from './deliveries-repository.js';
import {
  deleteWebhook as deleteWebhookRow,
  findWebhook,
  insertWebhook,
  rotateSecret as rotateSecretRow,
  updateWebhook as updateWebhookRow,
} from './repository.js';
import type { CreateWebhookInput, DeliveryView, UpdateWebhookInput, WebhookView } from './schemas.js';
import { type ResolveHost, urlProblem } from './url-guard.js';

/** What the webhook rules need beyond the store: the URL policy and a way to wake the dispatcher. */
export interface WebhookDeps {
  store: Store;
  /** Allow URLs resolving to private addresses (config WEBHOOK_ALLOW_PRIVATE). */
  allowPrivate: boolean;
  /** Resolves a URL's host for the address check. */
  resolveHost: ResolveHost;
  /** Tells the dispatcher that deliveries may be due now. */
  wake(): void;
}

/** A URL and why it cannot be a webhook URL (null: it can), found before the change's transaction. */
export interface CheckedUrl {
  url: string;
  problem: string | null;
}

const missing = (id: string) => notFound('Webhook', id);

const inactiveConflict = () =>
  conflict('The webhook is inactive; activate it (PATCH active: true) first', [
    { field: 'active', message: 'is false' },
  ]);

const target = (id: string) => ({ type: 'webhook', id });

/** ["*"] alone, or specific types: "*" next to others would be ambiguous. */
function checkEvents(events: string[] | undefined) {
  if (events?.includes('*') && events.length > 1) {
    throw fieldError('events', 'is either ["*"] or a list of event types, not both');
  }
}

/** Resolves and checks a URL; call it before the transaction of the change that saves it. */
export async function checkUrl(deps: WebhookDeps, url: string): Promise<CheckedUrl> {
  return { url, problem: await urlProblem(url, deps.allowPrivate, deps.resolveHost) };
}

/** Throws VALIDATION_ERROR when `url` was found unfit (checked now when no earlier check is given). */
async function refuseBadUrl(deps: WebhookDeps, url: string | undefined, checked: CheckedUrl | null) {
  if (url === undefined) return;
  const { problem } = checked?.url === url ? checked : await checkUrl(deps, url);
  if (problem !== null) throw fieldError('url', problem);
}

export async function getWebhook(store: Store, id: string): Promise<WebhookView> {
  const hook = await findWebhook(store, id);
  if (hook === undefined) throw missing(id);
  return hook;
}

/** Registers an endpoint, owned by the API key that calls; its signing secret is returned this once. */
export async function createWebhook(
  deps: WebhookDeps,
  user: AuthUser,
  body: CreateWebhookInput,
  audit: AuditTrail,
  checked: CheckedUrl | null = null,
) {
  const { url, events, description = null, active = true } = body;
  checkEvents(events);
  await refuseBadUrl(deps, url, checked);
  const apiKeyId = user.kind === 'api_key' ? user.id : null;
  return withEvents(deps.store, async (tx, outbox) => {
    const { view, secret } = await insertWebhook(tx, { url, events, description, active, apiKeyId });
    await audit.record(tx, 'webhook.created', target(view.id));
    outbox.add({ type: 'webhook.created', actor: staffActor(user), data: view });
    return { ...view, secret };
  });
}

/**
 * Changes an endpoint. An API key that changes it becomes its owner (it could point it anywhere);
 * an admin turning it on with a staff token takes it over: it then belongs to no key.
 */
export async function updateWebhook(
  deps: WebhookDeps,
  user: AuthUser,
  id: string,
  body: UpdateWebhookInput,
  audit: AuditTrail,
  checked: CheckedUrl | null = null,
): Promise<WebhookView> {
  checkEvents(body.events);
  await refuseBadUrl(deps, body.url, checked);
  const apiKeyId = user.kind === 'api_key' ? user.id : body.active === true ? null : undefined;
  const hook = await withEvents(deps.store, async (tx, outbox) => {
    const before = await findWebhook(tx, id);
    const changed = before === undefined ? undefined : await updateWebhookRow(tx, id, { ...body, apiKeyId });
    if (before === undefined || changed === undefined) throw missing(id);
    await audit.record(tx, 'webhook.updated', target(id));
    const changes = changesOf(before, changed);
    if (Object.keys(changes).length > 0) {
      outbox.add({ type: 'webhook.updated', actor: staffActor(user), data: changed, changes });
    }
    return changed;
  });
  // Re-activated: its waiting deliveries are due now.
  if (body.active === true) deps.wake();
  return hook;
}

export async function deleteWebhook(store: Store, user: AuthUser, id: string, audit: AuditTrail): Promise<void> {
  await withEvents(store, async (tx, outbox) => {
    const before = await findWebhook(tx, id);
    if (before === undefined || !(await deleteWebhookRow(tx, id))) throw missing(id);
    await audit.record(tx, 'webhook.deleted', target(id));
    outbox.add({ type: 'webhook.deleted', actor: staffActor(user), data: before });
  });
}

/** Replaces the signing secret; the new one is returned this once. */
export function rotateSecret(store: Store, id: string, audit: AuditTrail) {
  return store.transact(async (tx) => {
    const secret = await rotateSecretRow(tx, id);
    const hook = secret === undefined ? undefined : await findWebhook(tx, id);
    if (hook === undefined) throw missing(id);
    await audit.record(tx, 'webhook.secret_rotated', target(id));
    return { ...hook, secret: secret! };
  });
}

/** Queues a webhook.test event for this endpoint only and answers its delivery. */
export async function sendTest(store: Store, user: AuthUser, id: string): Promise<DeliveryView> {
  const deliveryId = newId('whd');
  await withEvents(store, async (tx, outbox) => {
    const hook = await findWebhook(tx, id);
    if (hook === undefined) throw missing(id);
    if (!hook.active) throw inactiveConflict();
    outbox.add({ type: 'webhook.test', actor: staffActor(user), data: hook, only: { webhookId: id, deliveryId } });
  });
  return (await findDelivery(store, id, deliveryId))!;
}

/** Makes a delivery pending and due now, keeping its attempts, and wakes the dispatcher. */
export async function redeliver(deps: WebhookDeps, id: string, deliveryId: string): Promise<DeliveryView> {
  const { store } = deps;
  const hook = await findWebhook(store, id);
  if (hook === undefined) throw missing(id);
  const found = await findDelivery(store, id, deliveryId);
  if (found === undefined) throw notFound('Delivery', deliveryId);
  if (!hook.active) throw inactiveConflict();
  if (!(await scheduleNow(store, deliveryId))) {
    throw conflict('An attempt of this delivery is in progress; retry in a few seconds');
  }
  deps.wake();
  return (await findDelivery(store, id, deliveryId))!;
}
