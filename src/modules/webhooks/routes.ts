// Owns /webhooks (admin only): register, list, get, change, delete an endpoint, rotate its secret
// (shown once, like at creation), send it a test event, and mount its deliveries routes. A new URL
// is resolved and checked in a preHandler, before the handler's transaction (an Idempotency-Key
// or If-Match runs the whole handler in one) could hold SQLite's writer while DNS answers.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { ADMIN } from '../../lib/auth.js';
import { currentById } from '../../lib/etag.js';
import { listPage } from '../../lib/pages.js';
import { BODY_ERRORS, errorResponse, IdParams, Ok, OkList, ok, STANDARD_ERRORS } from '../../lib/schemas.js';
import { auditTrail } from '../audit/trail.js';
import { deliveriesRoutes, webhookDeps } from './deliveries-routes.js';
import { findWebhook, listWebhooks, toWebhook } from './repository.js';
import {
  CreateWebhookBody,
  DeletedWebhook,
  Delivery,
  ListWebhooksQuery,
  UpdateWebhookBody,
  Webhook,
  WebhookWithSecret,
} from './schemas.js';
import {
  type CheckedUrl,
  checkUrl,
  createWebhook,
  deleteWebhook,
  getWebhook,
  rotateSecret,
  sendTest,
  updateWebhook,
} from './service.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The body's webhook URL as checked before the handler ran (null: the body names none). */
    webhookUrl: CheckedUrl | null;
  }
}

const CONFLICT = { 409: errorResponse('CONFLICT: the webhook is inactive', 409) };

export const webhooksRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const db = () => app.ctx.store;
  const deps = () => webhookDeps(app);

  app.decorateRequest('webhookUrl', null);
  // A replay of an Idempotency-Key runs no handler and ignores the check.
  const checkUrlFirst = async (request: FastifyRequest) => {
    const url = (request.body as { url?: unknown } | undefined)?.url;
    if (typeof url === 'string') request.webhookUrl = await checkUrl(deps(), url);
  };

  app.post(
    '/',
    {
      config: { access: ADMIN, scope: 'webhooks:write' },
      preHandler: checkUrlFirst,
      schema: {
        tags: ['webhooks'],
        operationId: 'createWebhook',
        summary: 'Register a webhook endpoint (admin); the signing secret is in this response only',
        body: CreateWebhookBody,
        response: { 201: Ok(WebhookWithSecret), ...STANDARD_ERRORS, ...BODY_ERRORS },
      },
    },
    async (request, reply) => {
      const created = await createWebhook(deps(), request.user!, request.body, auditTrail(request), request.webhookUrl);
      reply.code(201);
      return ok(created);
    },
  );

  app.get(
    '/',
    {
      config: { access: ADMIN, scope: 'webhooks:read' },
      schema: {
        tags: ['webhooks'],
        operationId: 'listWebhooks',
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
      config: { access: ADMIN, scope: 'webhooks:read' },
      schema: {
        tags: ['webhooks'],
        operationId: 'getWebhook',
        summary: 'Get a webhook endpoint (admin); the secret is never shown again',
        params: IdParams,
        response: { 200: Ok(Webhook), ...STANDARD_ERRORS },
      },
    },
    async (request) => ok(await getWebhook(db(), request.params.id)),
  );

  app.patch(
    '/:id',
    {
      config: { access: ADMIN, scope: 'webhooks:write', current: currentById('webhooks', findWebhook) },
      preHandler: checkUrlFirst,
      schema: {
        tags: ['webhooks'],
        operationId: 'updateWebhook',
        summary: 'Change a webhook endpoint: url, events, description, active (admin)',
        params: IdParams,
        body: UpdateWebhookBody,
        response: { 200: Ok(Webhook), ...STANDARD_ERRORS, ...BODY_ERRORS },
      },
    },
    async (request) =>
      ok(
        await updateWebhook(
          deps(),
          request.user!,
          request.params.id,
          request.body,
          auditTrail(request),
          request.webhookUrl,
        ),
      ),
  );

  app.delete(
    '/:id',
    {
      config: { access: ADMIN, scope: 'webhooks:write', current: currentById('webhooks', findWebhook) },
      schema: {
        tags: ['webhooks'],
        operationId: 'deleteWebhook',
        summary: 'Delete a webhook endpoint and its delivery history (admin)',
        params: IdParams,
        response: { 200: Ok(DeletedWebhook), ...STANDARD_ERRORS },
      },
    },
    async (request) => {
      const { id } = request.params;
      await deleteWebhook(db(), request.user!, id, auditTrail(request));
      return ok({ id, deleted: true as const });
    },
  );

  app.post(
    '/:id/rotate-secret',
    {
      config: { access: ADMIN, scope: 'webhooks:write' },
      schema: {
        tags: ['webhooks'],
        operationId: 'rotateWebhookSecret',
        summary: 'Replace the signing secret (admin); the new one is shown once and signs from now on',
        params: IdParams,
        response: { 200: Ok(WebhookWithSecret), ...STANDARD_ERRORS },
      },
    },
    async (request) => ok(await rotateSecret(db(), request.params.id, auditTrail(request))),
  );

  app.post(
    '/:id/test',
    {
      config: { access: ADMIN, scope: 'webhooks:write' },
      schema: {
        tags: ['webhooks'],
        operationId: 'testWebhook',
        summary: 'Send a webhook.test event to this endpoint only (admin); answers the queued delivery',
        params: IdParams,
        response: { 202: Ok(Delivery), ...STANDARD_ERRORS, ...CONFLICT },
      },
    },
    async (request, reply) => {
      const delivery = await sendTest(db(), request.user!, request.params.id);
      reply.code(202);
      return ok(delivery);
    },
  );

  await app.register(deliveriesRoutes);
};
