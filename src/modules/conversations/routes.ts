// Owns /conversations: list, get, create, update and bulk update (admin and manager: all;
// staff: only conversations assigned to them, status changes only), and mounts the messages routes.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { PageRequest } from '../../db/paginate.js';
import { ownerFilter } from '../../lib/access.js';
import { ANY_ROLE } from '../../lib/auth.js';
import { BulkBody, BulkResponse, runBulk } from '../../lib/bulk.js';
import { fieldError } from '../../lib/errors.js';
import { currentById } from '../../lib/etag.js';
import { listPage, listPageJson } from '../../lib/pages.js';
import { BODY_ERRORS, errorResponse, IdParams, Ok, OkList, ok, STANDARD_ERRORS } from '../../lib/schemas.js';
import { currentStays } from '../stays/current.js';
import { dayHoldsUntil, dayIn, hotelClockOf, hotelToday } from '../stays/dates.js';
import { listLabelled } from './label-lists.js';
import { labelFilter } from './labels.js';
import { messagesRoutes } from './messages-routes.js';
import {
  type ConversationJsonRow,
  findConversation,
  listConversations,
  nextSlaMoment,
  toConversation,
} from './repository.js';
import {
  type BulkUpdateItem,
  BulkUpdateItem as BulkUpdateItemSchema,
  Conversation,
  type ConversationView,
  CreateConversationBody,
  ListConversationsQuery,
  UpdateConversationBody,
} from './schemas.js';
import { createConversation, updateConversation, visibleConversation } from './service.js';

export const conversationsRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const db = () => app.ctx.store;

  app.get(
    '/',
    {
      config: { access: ANY_ROLE, scope: 'conversations:read' },
      schema: {
        tags: ['conversations'],
        operationId: 'listConversations',
        summary: 'List conversations, latest activity first (a staff-role caller sees only their own)',
        description:
          '`label=a,b` keeps those carrying any of the labels (compared lower-cased), with the other filters. ' +
          'Every filter is an index range, with its total from maintained counts (several labels: counted ' +
          'from their index ranges).',
        querystring: ListConversationsQuery,
        response: { 200: OkList(Conversation), ...STANDARD_ERRORS },
      },
    },
    async (request, reply) => {
      const { status, channel, assignee, label, sla } = request.query;
      const filter = {
        status,
        channel,
        ...(sla !== undefined && { sla: { status: sla, now: new Date().toISOString() } }),
        ...(assignee !== undefined && { assignee: assignee === 'unassigned' ? null : assignee }),
        onlyAssignee: ownerFilter(request.user!),
      };
      const labels = labelFilter(label);
      // Label lists read their own index ranges, which hold no SLA columns (docs/productivity.md).
      if (labels !== undefined && sla !== undefined) throw fieldError('sla', 'cannot be combined with label');
      if (labels === undefined) {
        const at = Date.now();
        const now = new Date(at).toISOString();
        // One statement: the rows as JSON, their stays and SLA views included (repository.ts). The
        // hotel's today from its setting, read with the cache's data version where the store can
        // (PostgreSQL: one round trip for both), else read here.
        const read = async (req: PageRequest, hotel?: { text: string | null }) => {
          const today = hotel === undefined ? await hotelToday(db()) : dayIn(hotelClockOf(hotel.text).timezone);
          return listConversations(db(), { ...filter, now, today }, req);
        };
        const cache = app.ctx.pageCache;
        // A list by SLA status is left out: a row outside the page may join it as time passes.
        const caching =
          cache === null || sla !== undefined
            ? undefined
            : {
                cache,
                // Everything else the page depends on: the rows the caller may see (a staff-role caller
                // only theirs; an admin, a manager and an API key with the scope see them all) and the
                // page asked for, as sent.
                key: JSON.stringify([
                  'conversations/v1',
                  filter.onlyAssignee ?? null,
                  status ?? null,
                  channel ?? null,
                  assignee ?? null,
                  request.query.page ?? null,
                  request.query.limit ?? null,
                  request.query.cursor ?? null,
                ]),
                // The hotel's today (current stays) and the rows' next SLA moment (their SLA status).
                until: async (rows: ConversationJsonRow[]) =>
                  Math.min(dayHoldsUntil(at), await nextSlaMoment(db(), rows, at)),
                setting: 'hotel',
              };
        return listPageJson(request, reply, 'conversations', read, (row) => row.json, caching);
      }
      return listPage(
        request,
        reply,
        'conversations',
        async (req) => {
          const page = await listLabelled(db(), { ...filter, labels }, req);
          // The page's current stays in one statement, not one per conversation.
          const stays = await currentStays(
            db(),
            page.rows.map((r) => r.guest_id),
          );
          return { ...page, rows: page.rows.map((r) => ({ ...r, stay: stays.get(r.guest_id) ?? null })) };
        },
        toConversation,
      );
    },
  );

  // Registered before /:id so the static path is the documented one; the router prefers it anyway.
  app.patch(
    '/bulk',
    {
      config: { access: ANY_ROLE, scope: 'conversations:write', bucket: 'bulk', idempotent: true },
      schema: {
        tags: ['conversations'],
        operationId: 'bulkUpdateConversations',
        summary: 'Update up to 100 conversations; each item succeeds or fails on its own',
        description:
          'Each item is `{ id, status?, assignee?, labels? }` with at least one change and follows the rules of ' +
          'PATCH /conversations/:id. Counts in the bulk rate-limit bucket.',
        body: BulkBody(BulkUpdateItemSchema),
        response: { 200: BulkResponse(Conversation), ...STANDARD_ERRORS, ...BODY_ERRORS },
      },
    },
    async (request) => {
      const user = request.user!;
      return runBulk<BulkUpdateItem, ConversationView>(
        request.body.items,
        BulkUpdateItemSchema,
        ({ id, ...changes }) => updateConversation(db(), user, id, changes, app.jobs),
        request.log,
      );
    },
  );

  app.get(
    '/:id',
    {
      config: { access: ANY_ROLE, scope: 'conversations:read' },
      schema: {
        tags: ['conversations'],
        operationId: 'getConversation',
        summary: 'Get a conversation (a staff-role caller: only one assigned to them)',
        params: IdParams,
        response: { 200: Ok(Conversation), ...STANDARD_ERRORS },
      },
    },
    async (request) => ok(await visibleConversation(db(), request.user!, request.params.id)),
  );

  app.post(
    '/',
    {
      config: { access: ANY_ROLE, scope: 'conversations:write' },
      schema: {
        tags: ['conversations'],
        operationId: 'createConversation',
        summary: 'Start a conversation with a guest, optionally with a first outbound message',
        description:
          'Starts open. A staff-role caller may only create a conversation assigned to themselves (the default ' +
          'for them); for admin and manager the default is unassigned.',
        body: CreateConversationBody,
        response: {
          201: Ok(Conversation),
          409: errorResponse('CONFLICT: a first text on WhatsApp meets the closed 24-hour window', 409),
          ...STANDARD_ERRORS,
          ...BODY_ERRORS,
        },
      },
    },
    async (request, reply) => {
      const conversation = await createConversation(db(), request.user!, request.body, app.channelDispatcher);
      reply.code(201);
      return ok(conversation);
    },
  );

  app.patch(
    '/:id',
    {
      config: {
        access: ANY_ROLE,
        scope: 'conversations:write',
        current: currentById('conversations', findConversation),
      },
      schema: {
        tags: ['conversations'],
        operationId: 'updateConversation',
        summary: 'Change the status, assignee and/or labels (a staff-role caller: status and labels of their own)',
        params: IdParams,
        body: UpdateConversationBody,
        response: { 200: Ok(Conversation), ...STANDARD_ERRORS, ...BODY_ERRORS },
      },
    },
    async (request) => ok(await updateConversation(db(), request.user!, request.params.id, request.body, app.jobs)),
  );

  await app.register(messagesRoutes);
};
