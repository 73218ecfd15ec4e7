// Owns /knowledge: every role reads and searches the knowledge base; admins and managers write it.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { PageRequest } from '../../db/paginate.js';
import { ADMIN_MANAGER, ANY_ROLE } from '../../lib/auth.js';
import { notFound } from '../../lib/errors.js';
import { listPage } from '../../lib/pages.js';
import { BODY_ERRORS, IdParams, Ok, OkList, ok, STANDARD_ERRORS } from '../../lib/schemas.js';
import { knowledgeDeleted, recordEvents, staffActor } from '../events/emit.js';
import { withEvents } from '../events/outbox.js';
import { deleteEntry, findEntry, insertEntry, listEntries, replaceEntry, toEntry } from './repository.js';
import {
  CreateEntryBody,
  DEFAULT_CATEGORY,
  DeletedEntry,
  KnowledgeEntry,
  ListEntriesQuery,
  UpdateEntryBody,
} from './schemas.js';

const missing = (id: string) => notFound('Knowledge entry', id);

export const knowledgeRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const db = () => app.ctx.store;

  app.get(
    '/',
    {
      config: { access: ANY_ROLE, cache: true },
      schema: {
        tags: ['knowledge'],
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
      config: { access: ANY_ROLE },
      schema: {
        tags: ['knowledge'],
        summary: 'Get a knowledge entry',
        params: IdParams,
        response: { 200: Ok(KnowledgeEntry), ...STANDARD_ERRORS },
      },
    },
    async (request) => {
      const entry = await findEntry(db(), request.params.id);
      if (entry === undefined) throw missing(request.params.id);
      return ok(entry);
    },
  );

  app.post(
    '/',
    {
      config: { access: ADMIN_MANAGER },
      schema: {
        tags: ['knowledge'],
        summary: 'Create a knowledge entry (admin, manager); category defaults to general',
        body: CreateEntryBody,
        response: { 201: Ok(KnowledgeEntry), ...STANDARD_ERRORS, ...BODY_ERRORS },
      },
    },
    async (request, reply) => {
      const { title, content, category = DEFAULT_CATEGORY } = request.body;
      const entry = await withEvents(db(), async (tx, outbox) => {
        const created = await insertEntry(tx, { title, content, category });
        recordEvents(outbox, 'knowledge', staffActor(request.user!), null, created);
        return created;
      });
      reply.code(201);
      return ok(entry);
    },
  );

  app.put(
    '/:id',
    {
      config: { access: ADMIN_MANAGER },
      schema: {
        tags: ['knowledge'],
        summary: 'Replace a knowledge entry’s title and content, and its category when given (admin, manager)',
        params: IdParams,
        body: UpdateEntryBody,
        response: { 200: Ok(KnowledgeEntry), ...STANDARD_ERRORS, ...BODY_ERRORS },
      },
    },
    async (request) => {
      const { id } = request.params;
      const entry = await withEvents(db(), async (tx, outbox) => {
        const before = await findEntry(tx, id);
        const after = before && (await replaceEntry(tx, id, request.body));
        if (before === undefined || after === undefined) throw missing(id);
        recordEvents(outbox, 'knowledge', staffActor(request.user!), before, after);
        return after;
      });
      return ok(entry);
    },
  );

  app.delete(
    '/:id',
    {
      config: { access: ADMIN_MANAGER },
      schema: {
        tags: ['knowledge'],
        summary: 'Delete a knowledge entry (admin, manager); it leaves search at once',
        params: IdParams,
        response: { 200: Ok(DeletedEntry), ...STANDARD_ERRORS },
      },
    },
    async (request) => {
      const { id } = request.params;
      await withEvents(db(), async (tx, outbox) => {
        const entry = await findEntry(tx, id);
        if (entry === undefined || !(await deleteEntry(tx, id))) throw missing(id);
        knowledgeDeleted(outbox, staffActor(request.user!), entry);
      });
      return ok({ id, deleted: true as const });
    },
  );
};
