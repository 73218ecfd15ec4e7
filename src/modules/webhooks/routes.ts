// Owns /webhooks (admin only): register, list, get, change, delete an endpoint, rotate its secret
// (shown once, like at creation), send it a test event, and mount its deliveries routes.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ADMIN } from '../../lib/auth.js';
import { fieldError, notFound } from '../../lib/errors.js';
import { newId } from '../../lib/ids.js';
import { listPage } from '../../lib/pages.js';
import { BODY_ERRORS, IdParams, Ok, OkList, ok, STANDARD_ERRORS } from '../../lib/schemas.js';
import { staffActor } from '../events/emit.js';
import { withEvents } from '../events/outbox.js';
import { findDelivery } from './deliveries-repository.js';
import { deliveriesRoutes, inactiveConflict } from './deliveries-routes.js';
import {
  deleteWebhook,
  findWebhook,
  insertWebhook,
  listWebhooks,
  rotateSecret,
  toWebhook,
  updateWebhook,
} from './repository.js';
import {
  CreateWebhookBody,
  DeletedWebhook,
  Delivery,
  ListWebhooksQuery,
  UpdateWebhookBody,
  Webhook,
  WebhookWithSecret,
} from './schemas.js';
import { urlProblem } from './url-guard.js';

const missing = (id: string) => notFound('Webhook', id);
const CONFLICT = { 409: { ...STANDARD_ERRORS[404], description: 'CONFLICT: the webhook is inactive' } };

/** ["*"] alone, or specific types: "*" next to others would be ambiguous. */
function checkEvents(events: string[] | undefined) {
  if (events?.includes('*') && events.length > 1) {
    throw fieldError('events', 'is either ["*"] or a list of event types, not both');
  }
}

export const webhooksRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const db = () => app.ctx.store;
  const checkUrl = async (url: string | undefined) => {
    if (url === undefined) return;
    const problem = await urlProblem(url, app.ctx.config.webhookAllowPrivate);
    if (problem !== null) throw fieldError('url', problem);
  };

  app.post(
    '/',
    {
      config: { access: ADMIN },
      schema: {
        tags: ['webhooks'],
        summary: 'Register a webhook endpoint (admin); the signing secret is in this response only',
        body: CreateWebhookBody,
        response: { 201: Ok(WebhookWithSecret), ...STANDARD_ERRORS, ...BODY_ERRORS },
      },
    },
    async (request, reply) => {
      const { url, events, description = null, active = true } = request.body;
      checkEvents(events);
      await checkUrl(url);
      const { view, secret } = await insertWebhook(db(), { url, events, description, active });
      reply.code(201);
      return ok({ ...view, secret });
    },
  );

  app.get(
    '/',
    {
      config: { access: ADMIN },
      schema: {
        tags: ['webhooks'],
        summary: 'List webhook endpoints, newest first (admin)',
        querystring: ListWebhooksQuery,
        response: { 200: OkList(Webhook), ...STANDARD_ERRORS },
      },
    },
    async (request, reply) => listPage(request, reply, 'webhooks', (req) => listWebhooks(db(), {}, req), toWebhook),
  );

  app.get(
    '/:id',
    {
      config: { access: ADMIN },
      schema: {
        tags: ['webhooks'],
        summary: 'Get a webhook endpoint (admin); the secret is never shown again',
        params: IdParams,
        response: { 200: Ok(Webhook), ...STANDARD_ERRORS },
      },
    },
    async (request) => {
      const hook = await findWebhook(db(), request.params.id);
      if (hook === undefined) throw missing(request.params.id);
      return ok(hook);
    },
  );

  app.patch(
    '/:id',
    {
      config: { access: ADMIN },
      schema: {
        tags: ['webhooks'],
        summary: 'Change a webhook endpoint: url, events, description, active (admin)',
        params: IdParams,
        body: UpdateWebhookBody,
        response: { 200: Ok(Webhook), ...STANDARD_ERRORS, ...BODY_ERRORS },
      },
    },
    async (request) => {
      const { id } = request.params;
      checkEvents(request.body.events);
      await checkUrl(request.body.url);
      const hook = await updateWebhook(db(), id, request.body);
      if (hook === undefined) throw missing(id);
      // Re-activated: its waiting deliveries are due now.
      if (request.body.active === true) app.eventsRuntime.dispatcher.wake();
      return ok(hook);
    },
  );

  app.delete(
    '/:id',
    {
      config: { access: ADMIN },
      schema: {
        tags: ['webhooks'],
        summary: 'Delete a webhook endpoint and its delivery history (admin)',
        params: IdParams,
        response: { 200: Ok(DeletedWebhook), ...STANDARD_ERRORS },
      },
    },
    async (request) => {
      const { id } = request.params;
      if (!(await deleteWebhook(db(), id))) throw missing(id);
      return ok({ id, deleted: true as const });
    },
  );

  app.post(
    '/:id/rotate-secret',
    {
      config: { access: ADMIN },
      schema: {
        tags: ['webhooks'],
        summary: 'Replace the signing secret (admin); the new one is shown once and signs from now on',
        params: IdParams,
        response: { 200: Ok(WebhookWithSecret), ...STANDARD_ERRORS },
      },
    },
    async (request) => {
      const { id } = request.params;
      const secret = await rotateSecret(db(), id);
      const hook = secret === undefined ? undefined : await findWebhook(db(), id);
      if (hook === undefined) throw missing(id);
      return ok({ ...hook, secret: secret! });
    },
  );

  app.post(
    '/:id/test',
    {
      config: { access: ADMIN },
      schema: {
        tags: ['webhooks'],
        summary: 'Send a webhook.test event to this endpoint only (admin); answers the queued delivery',
        params: IdParams,
        response: { 202: Ok(Delivery), ...STANDARD_ERRORS, ...CONFLICT },
      },
    },
    async (request, reply) => {
      const { id } = request.params;
      const deliveryId = newId('whd');
      await withEvents(db(), async (tx, outbox) => {
        const hook = await findWebhook(tx, id);
        if (hook === undefined) throw missing(id);
        if (!hook.active) throw inactiveConflict();
        outbox.add({
          type: 'webhook.test',
          actor: staffActor(request.user!),
          data: hook,
          only: { webhookId: id, deliveryId },
        });
      });
      const delivery = await findDelivery(db(), id, deliveryId);
      reply.code(202);
      return ok(delivery!);
    },
  );

  await app.register(deliveriesRoutes);
};
