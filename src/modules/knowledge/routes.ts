// Owns /knowledge: every role reads and searches the knowledge base; admins and managers write it.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { PageRequest } from '../../db/paginate.js';
import { ADMIN_MANAGER, ANY_ROLE } from '../../lib/auth.js';
import { currentById } from '../../lib/etag.js';
import { listPage } from '../../lib/pages.js';
import { BODY_ERRORS, IdParams, Ok, OkList, ok, STANDARD_ERRORS } from '../../lib/schemas.js';
import { findEntry, listEntries, toEntry } from './repository.js';
import { CreateEntryBody, DeletedEntry, KnowledgeEntry, ListEntriesQuery, UpdateEntryBody } from './schemas.js';
import { createEntry, deleteEntry, getEntry, updateEntry } from './service.js';

export const knowledgeRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const db = () => app.ctx.store;

  app.get(
    '/',
    {
      config: { access: ANY_ROLE, scope: 'knowledge:read' },
      schema: {
        tags: ['knowledge'],
        operationId: 'listKnowledgeEntries',
        summary: 'List knowledge entries by title, or search them full-text, best match first',
        querystring: ListEntriesQuery,
        response: { 200: OkList(KnowledgeEntry), ...STANDARD_ERRORS },
      },
    },
    async (request, reply) => {
      const { category, search } = request.query;
      // `?search=` is what an empty search box sends: it means no search, not "match nothing".
      const text = search?.trim() === '' ? undefined : search;
      const read = (req: PageRequest) => listEntries(db(), { category, search: text }, req);
      // Search results come best match first: ranked, so by page number only.
      return listPage(request, reply, 'knowledge', read, toEntry, { ranked: text !== undefined });
    },
  );

  app.get(
    '/:id',
    {
      config: { access: ANY_ROLE, scope: 'knowledge:read' },
      schema: {
        tags: ['knowledge'],
        operationId: 'getKnowledgeEntry',
        summary: 'Get a knowledge entry',
        params: IdParams,
        response: { 200: Ok(KnowledgeEntry), ...STANDARD_ERRORS },
      },
    },
    async (request) => ok(await getEntry(db(), request.params.id)),
  );

  app.post(
    '/',
    {
      config: { access: ADMIN_MANAGER, scope: 'knowledge:write' },
      schema: {
        tags: ['knowledge'],
        operationId: 'createKnowledgeEntry',
        summary: 'Create a knowledge entry (admin, manager); category defaults to general',
        body: CreateEntryBody,
        response: { 201: Ok(KnowledgeEntry), ...STANDARD_ERRORS, ...BODY_ERRORS },
      },
    },
    async (request, reply) => {
      const entry = await createEntry(db(), request.user!, request.body);
      reply.code(201);
      return ok(entry);
    },
  );

  app.put(
    '/:id',
    {
      config: { access: ADMIN_MANAGER, scope: 'knowledge:write', current: currentById('knowledge_entries', findEntry) },
      schema: {
        tags: ['knowledge'],
        operationId: 'replaceKnowledgeEntry',
        summary: 'Replace a knowledge entry’s title and content, and its category when given (admin, manager)',
        params: IdParams,
        body: UpdateEntryBody,
        response: { 200: Ok(KnowledgeEntry), ...STANDARD_ERRORS, ...BODY_ERRORS },
      },
    },
    async (request) => ok(await updateEntry(db(), request.user!, request.params.id, request.body)),
  );

  app.delete(
    '/:id',
    {
      config: { access: ADMIN_MANAGER, scope: 'knowledge:write', current: currentById('knowledge_entries', findEntry) },
      schema: {
        tags: ['knowledge'],
        operationId: 'deleteKnowledgeEntry',
        summary: 'Delete a knowledge entry (admin, manager); it leaves search at once',
        params: IdParams,
        response: { 200: Ok(DeletedEntry), ...STANDARD_ERRORS },
      },
    },
    async (request) => {
      const { id } = request.params;
      await deleteEntry(db(), request.user!, id);
      return ok({ id, deleted: true as const });
    },
  );
};
