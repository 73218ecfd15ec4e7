// Owns /webhooks/:id/deliveries (admin only): an endpoint's delivery history with each attempt's
// outcome, and redelivering one now.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { PageRequest } from '../../db/paginate.js';
import { ADMIN } from '../../lib/auth.js';
import { notFound } from '../../lib/errors.js';
import { listPage } from '../../lib/pages.js';
import { errorResponse, IdParams, Ok, OkList, ok, STANDARD_ERRORS } from '../../lib/schemas.js';
import { listDeliveries, toDelivery } from './deliveries-repository.js';
import { findWebhook } from './repository.js';
import { Delivery, DeliveryParams, ListDeliveriesQuery } from './schemas.js';
import { redeliver, type WebhookDeps } from './service.js';

/** The webhook service's dependencies, from the app. */
export const webhookDeps = (app: FastifyInstance): WebhookDeps => ({
  store: app.ctx.store,
  allowPrivate: app.ctx.config.webhookAllowPrivate,
  resolveHost: app.ctx.resolveHost,
  wake: () => app.eventsRuntime.dispatcher.wake(),
});

const CONFLICT = {
  409: errorResponse('CONFLICT: the webhook is inactive or an attempt is in progress', 409),
};

export const deliveriesRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const db = () => app.ctx.store;

  app.get(
    '/:id/deliveries',
    {
      config: { access: ADMIN, scope: 'webhooks:read' },
      schema: {
        tags: ['webhooks'],
        operationId: 'listWebhookDeliveries',
        summary: "List an endpoint's deliveries, newest first, with the last attempt's outcome (admin)",
        params: IdParams,
        querystring: ListDeliveriesQuery,
        response: { 200: OkList(Delivery), ...STANDARD_ERRORS },
      },
    },
    async (request, reply) => {
      const { id } = request.params;
      const { status } = request.query;
      if ((await findWebhook(db(), id)) === undefined) throw notFound('Webhook', id);
      const read = (req: PageRequest) => listDeliveries(db(), { webhookId: id, status }, req);
      return listPage(request, reply, 'deliveries', read, toDelivery);
    },
  );

  app.post(
    '/:id/deliveries/:deliveryId/redeliver',
    {
      config: { access: ADMIN, scope: 'webhooks:write' },
      schema: {
        tags: ['webhooks'],
        operationId: 'redeliverWebhookDelivery',
        summary: 'Attempt a delivery again now, with the same Webhook-Id and body (admin)',
        description:
          'The delivery becomes pending and due at once; its attempts keep counting. A failed delivery that ' +
          'fails again with a retryable error is retried on the usual schedule while attempts remain.',
        params: DeliveryParams,
        response: { 202: Ok(Delivery), ...STANDARD_ERRORS, ...CONFLICT },
      },
    },
    async (request, reply) => {
      const { id, deliveryId } = request.params;
      const delivery = await redeliver(webhookDeps(app), id, deliveryId);
      reply.code(202);
      return ok(delivery);
    },
  );
};
