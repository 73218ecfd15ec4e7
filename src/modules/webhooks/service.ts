// Owns the rules of webhook endpoints: an events list is ["*"] or specific types, a URL must pass
// the address guard, a missing endpoint is a 404, an inactive one takes no test or redelivery, and
// the dispatcher is woken when deliveries become due. Writes with events are one transaction.
import type { Store } from '../../db/store.js';
import type { AuthUser } from '../../lib/auth.js';
import { conflict, fieldError, notFound } from '../../lib/errors.js';
import { newId } from '../../lib/ids.js';
import { staffActor } from '../events/emit.js';
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
import { urlProblem } from './url-guard.js';

/** What the webhook rules need beyond the store: the URL policy and a way to wake the dispatcher. */
export interface WebhookDeps {
  store: Store;
  /** Allow URLs resolving to private addresses (config WEBHOOK_ALLOW_PRIVATE). */
  allowPrivate: boolean;
  /** Tells the dispatcher that deliveries may be due now. */
  wake(): void;
}

const missing = (id: string) => notFound('Webhook', id);

const inactiveConflict = () =>
  conflict('The webhook is inactive; activate it (PATCH active: true) first', [
    { field: 'active', message: 'is false' },
  ]);

/** ["*"] alone, or specific types: "*" next to others would be ambiguous. */
function checkEvents(events: string[] | undefined) {
  if (events?.includes('*') && events.length > 1) {
    throw fieldError('events', 'is either ["*"] or a list of event types, not both');
  }
}

async function checkUrl(url: string | undefined, allowPrivate: boolean) {
  if (url === undefined) return;
  const problem = await urlProblem(url, allowPrivate);
  if (problem !== null) throw fieldError('url', problem);
}

export async function getWebhook(store: Store, id: string): Promise<WebhookView> {
  const hook = await findWebhook(store, id);
  if (hook === undefined) throw missing(id);
  return hook;
}

/** Registers an endpoint; its signing secret is returned this once. */
export async function createWebhook(deps: WebhookDeps, body: CreateWebhookInput) {
  const { url, events, description = null, active = true } = body;
  checkEvents(events);
  await checkUrl(url, deps.allowPrivate);
  const { view, secret } = await insertWebhook(deps.store, { url, events, description, active });
  return { ...view, secret };
}

export async function updateWebhook(deps: WebhookDeps, id: string, body: UpdateWebhookInput): Promise<WebhookView> {
  checkEvents(body.events);
  await checkUrl(body.url, deps.allowPrivate);
  const hook = await updateWebhookRow(deps.store, id, body);
  if (hook === undefined) throw missing(id);
  // Re-activated: its waiting deliveries are due now.
  if (body.active === true) deps.wake();
  return hook;
}

export async function deleteWebhook(store: Store, id: string): Promise<void> {
  if (!(await deleteWebhookRow(store, id))) throw missing(id);
}

/** Replaces the signing secret; the new one is returned this once. */
export async function rotateSecret(store: Store, id: string) {
  const secret = await rotateSecretRow(store, id);
  const hook = secret === undefined ? undefined : await findWebhook(store, id);
  if (hook === undefined) throw missing(id);
  return { ...hook, secret: secret! };
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
