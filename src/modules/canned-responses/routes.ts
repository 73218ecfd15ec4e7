// Owns /canned-responses: every role reads and searches them (to answer guests with them); admins
// and managers write them. API keys: conversations:read and conversations:write.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { PageRequest } from '../../db/paginate.js';
import { ADMIN_MANAGER, ANY_ROLE } from '../../lib/auth.js';
import { currentById } from '../../lib/etag.js';
import { listPage } from '../../lib/pages.js';
import { BODY_ERRORS, CONFLICT_ERROR, IdParams, Ok, OkList, ok, STANDARD_ERRORS } from '../../lib/schemas.js';
import { findCanned, listCanned, toCanned } from './repository.js';
import { CannedResponse, CreateCannedBody, DeletedCanned, ListCannedQuery, UpdateCannedBody } from './schemas.js';
import { createCanned, deleteCanned, getCanned, updateCanned } from './service.js';

const TAGS = ['canned-responses'];

export const cannedResponsesRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const db = () => app.ctx.store;

  app.get(
    '/',
    {
      config: { access: ANY_ROLE, scope: 'conversations:read' },
      schema: {
        tags: TAGS,
        operationId: 'listCannedResponses',
        summary: 'List canned responses by shortcode, or search them, best match first',
        querystring: ListCannedQuery,
        response: { 200: OkList(CannedResponse), ...STANDARD_ERRORS },
      },
    },
    async (request, reply) => {
      const { search } = request.query;
      // `?search=` is what an empty search box sends: no search, as on /knowledge.
      const text = search?.trim() === '' ? undefined : search;
      const read = (req: PageRequest) => listCanned(db(), text, req);
      return listPage(request, reply, 'canned-responses', read, toCanned, { ranked: text !== undefined });
    },
  );

  app.get(
    '/:id',
    {
      config: { access: ANY_ROLE, scope: 'conversations:read' },
      schema: {
        tags: TAGS,
        operationId: 'getCannedResponse',
        summary: 'Get a canned response',
        params: IdParams,
        response: { 200: Ok(CannedResponse), ...STANDARD_ERRORS },
      },
    },
    async (request) => ok(await getCanned(db(), request.params.id)),
  );

  app.post(
    '/',
    {
      config: { access: ADMIN_MANAGER, scope: 'conversations:write' },
      schema: {
        tags: TAGS,
        operationId: 'createCannedResponse',
        summary: 'Create a canned response (admin, manager)',
        description:
          'Send it into a conversation with `POST /conversations/{id}/messages { "cannedResponseId": … }`: its ' +
          'placeholders are filled in for that conversation.',
        body: CreateCannedBody,
        response: { 201: Ok(CannedResponse), ...CONFLICT_ERROR, ...STANDARD_ERRORS, ...BODY_ERRORS },
      },
    },
    async (request, reply) => {
      const created = await createCanned(db(), request.body);
      reply.code(201);
      return ok(created);
    },
  );

  app.patch(
    '/:id',
    {
      config: {
        access: ADMIN_MANAGER,
        scope: 'conversations:write',
        current: currentById('canned_responses', findCanned),
      },
      schema: {
        tags: TAGS,
        operationId: 'updateCannedResponse',
        summary: 'Change a canned response’s shortcode, title and/or content (admin, manager)',
        params: IdParams,
        body: UpdateCannedBody,
        response: { 200: Ok(CannedResponse), ...CONFLICT_ERROR, ...STANDARD_ERRORS, ...BODY_ERRORS },
      },
    },
    async (request) => ok(await updateCanned(db(), request.params.id, request.body)),
  );

  app.delete(
    '/:id',
    {
      config: {
        access: ADMIN_MANAGER,
        scope: 'conversations:write',
        current: currentById('canned_responses', findCanned),
      },
      schema: {
        tags: TAGS,
        operationId: 'deleteCannedResponse',
        summary: 'Delete a canned response (admin, manager)',
        params: IdParams,
        response: { 200: Ok(DeletedCanned), ...STANDARD_ERRORS },
      },
    },
    async (request) => {
      const { id } = request.params;
      await deleteCanned(db(), id);
      return ok({ id, deleted: true as const });
    },
  );
};
