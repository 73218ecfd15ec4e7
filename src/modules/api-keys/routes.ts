// Owns /api-keys (admin with a staff token only: a key can never mint or widen keys): create (the
// key shown once), list, get, rename or re-scope, revoke, and rotate with a grace period.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ADMIN } from '../../lib/auth.js';
import { currentById } from '../../lib/etag.js';
import { listPage } from '../../lib/pages.js';
import { BODY_ERRORS, errorResponse, IdParams, Ok, OkList, ok, STANDARD_ERRORS } from '../../lib/schemas.js';
import { auditTrail } from '../audit/trail.js';
import { findApiKey, listApiKeys, toApiKey } from './repository.js';
import {
  ApiKey,
  ApiKeyWithSecret,
  CreateApiKeyBody,
  ListApiKeysQuery,
  RevokedApiKey,
  RotateApiKeyBody,
  UpdateApiKeyBody,
} from './schemas.js';
import { createApiKey, getApiKey, revokeKey, rotateKey, updateApiKeyFields } from './service.js';

const REVOKED = { 409: errorResponse('CONFLICT: the key is revoked', 409) };

export const apiKeysRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const db = () => app.ctx.store;
  const deps = () => ({ store: app.ctx.store, hasher: app.ctx.apiKeys });

  app.post(
    '/',
    {
      config: { access: ADMIN },
      schema: {
        tags: ['api-keys'],
        operationId: 'createApiKey',
        summary: 'Create an API key (admin); the key (gma_…) is in this response only',
        body: CreateApiKeyBody,
        response: { 201: Ok(ApiKeyWithSecret), ...STANDARD_ERRORS, ...BODY_ERRORS },
      },
    },
    async (request, reply) => {
      const created = await createApiKey(deps(), request.user!, request.body, auditTrail(request));
      reply.code(201);
      return ok(created);
    },
  );

  app.get(
    '/',
    {
      config: { access: ADMIN },
      schema: {
        tags: ['api-keys'],
        operationId: 'listApiKeys',
        summary: 'List API keys, newest first, revoked ones included (admin); secrets are never shown',
        querystring: ListApiKeysQuery,
        response: { 200: OkList(ApiKey), ...STANDARD_ERRORS },
      },
    },
    async (request, reply) => listPage(request, reply, 'api-keys', (req) => listApiKeys(db(), {}, req), toApiKey),
  );

  app.get(
    '/:id',
    {
      config: { access: ADMIN },
      schema: {
        tags: ['api-keys'],
        operationId: 'getApiKey',
        summary: 'Get an API key (admin); the secret is never shown again',
        params: IdParams,
        response: { 200: Ok(ApiKey), ...STANDARD_ERRORS },
      },
    },
    async (request) => ok(await getApiKey(db(), request.params.id)),
  );

  app.patch(
    '/:id',
    {
      config: { access: ADMIN, current: currentById('api_keys', findApiKey) },
      schema: {
        tags: ['api-keys'],
        operationId: 'updateApiKey',
        summary: 'Rename an API key or replace its scopes (admin); narrowed scopes hold from the next request',
        params: IdParams,
        body: UpdateApiKeyBody,
        response: { 200: Ok(ApiKey), ...STANDARD_ERRORS, ...BODY_ERRORS, ...REVOKED },
      },
    },
    async (request) => ok(await updateApiKeyFields(db(), request.params.id, request.body, auditTrail(request))),
  );

  app.delete(
    '/:id',
    {
      config: { access: ADMIN, current: currentById('api_keys', findApiKey) },
      schema: {
        tags: ['api-keys'],
        operationId: 'deleteApiKey',
        summary: 'Revoke an API key (admin): refused with 401 TOKEN_INVALID from the next request, everywhere',
        params: IdParams,
        response: { 200: Ok(RevokedApiKey), ...STANDARD_ERRORS },
      },
    },
    async (request) => {
      const { id } = request.params;
      const revokedAt = await revokeKey(db(), request.user!, id, auditTrail(request));
      return ok({ id, revoked: true as const, revokedAt });
    },
  );

  app.post(
    '/:id/rotate',
    {
      config: { access: ADMIN },
      schema: {
        tags: ['api-keys'],
        operationId: 'rotateApiKey',
        summary: 'Give an API key a new secret (admin); the old one works for graceSeconds more',
        params: IdParams,
        body: RotateApiKeyBody,
        response: { 200: Ok(ApiKeyWithSecret), ...STANDARD_ERRORS, ...BODY_ERRORS, ...REVOKED },
      },
    },
    async (request) =>
      ok(await rotateKey(deps(), request.params.id, request.body?.graceSeconds ?? 0, auditTrail(request))),
  );
};
