// Owns /stays (docs/stays.md): list and get (admin and manager all; staff the stays of guests they
// may see), create, upsert by the PMS's reference one at a time and in bulk, and update (admin,
// manager). No DELETE: a stay is cancelled. The rules are in service.ts.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { ownerFilter } from '../../lib/access.js';
import { ADMIN_MANAGER, ANY_ROLE } from '../../lib/auth.js';
import { BulkBody, BulkResponse, runBulk } from '../../lib/bulk.js';
import { validation } from '../../lib/errors.js';
import { currentById } from '../../lib/etag.js';
import { listPage } from '../../lib/pages.js';
import { BODY_ERRORS, CONFLICT_ERROR, IdParams, Ok, OkList, ok, STANDARD_ERRORS } from '../../lib/schemas.js';
import { isCalendarDay } from './dates.js';
import { listSteps, MAX_STEPS_LISTED } from './journey-steps.js';
import { findStay, findStayByRef, listStays, toStay } from './repository.js';
import {
  type BulkStayInput,
  BulkStayItem,
  CreateStayBody,
  JourneyStep,
  ListStaysQuery,
  PutStayBody,
  RefParams,
  Stay,
  type StayView,
  UpdateStayBody,
} from './schemas.js';
import { createStay, updateStay, upsertStay, visibleStay } from './service.js';

const stayUrl = (data: Record<string, unknown>) => `/api/v1/stays/${encodeURIComponent(String(data.id))}`;

export const staysRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const db = () => app.ctx.store;

  app.get(
    '/',
    {
      config: { access: ANY_ROLE, scope: 'stays:read' },
      schema: {
        tags: ['stays'],
        operationId: 'listStays',
        summary: 'List stays by checkIn, then id; filter by guest, status, room, arrival days or a night (`on`)',
        description:
          'A staff-role caller sees only stays of guests of their own conversations and tasks. Walk every stay ' +
          'with `cursor` (meta.nextCursor) for a sync.',
        querystring: ListStaysQuery,
        response: { 200: OkList(Stay), ...STANDARD_ERRORS },
      },
    },
    async (request, reply) => {
      const filter = { ...request.query, owner: ownerFilter(request.user!) };
      const problems = (['checkInFrom', 'checkInTo', 'on'] as const)
        .filter((k) => filter[k] !== undefined && !isCalendarDay(filter[k]!))
        .map((field) => ({ field, message: `${filter[field]} is not a day of the calendar` }));
      if (problems.length > 0) throw validation(problems, `${problems[0]!.field}: ${problems[0]!.message}`);
      return listPage(request, reply, 'stays', (req) => listStays(db(), filter, req), toStay);
    },
  );

  app.get(
    '/:id',
    {
      config: { access: ANY_ROLE, scope: 'stays:read' },
      schema: {
        tags: ['stays'],
        operationId: 'getStay',
        summary: 'Get a stay (a staff-role caller: only a stay of a guest they may see)',
        params: IdParams,
        response: { 200: Ok(Stay), ...STANDARD_ERRORS },
      },
    },
    async (request) => ok(await visibleStay(db(), request.user!, request.params.id)),
  );

  app.get(
    '/:id/journey',
    {
      config: { access: ANY_ROLE, scope: 'stays:read' },
      schema: {
        tags: ['stays'],
        operationId: 'getStayJourney',
        summary: "The stay's journey steps: each step's moment and what became of it, in due order",
        description:
          'One entry per journey step planned for the stay (docs/stays.md, Journeys): `scheduled` until its ' +
          'moment, then `done` (with the message or task it made), `skipped` or `failed` (with the reason). ' +
          'Read like GET /stays/:id: a staff-role caller only for a stay of a guest they may see.',
        params: IdParams,
        response: { 200: Ok(Type.Array(JourneyStep, { maxItems: MAX_STEPS_LISTED })), ...STANDARD_ERRORS },
      },
    },
    async (request) => {
      const stay = await visibleStay(db(), request.user!, request.params.id);
      return ok(await listSteps(db(), stay.id, stay.guestId));
    },
  );

  app.post(
    '/',
    {
      config: { access: ADMIN_MANAGER, scope: 'stays:write' },
      schema: {
        tags: ['stays'],
        operationId: 'createStay',
        summary: 'Create a stay (admin, manager); a taken externalRef is a 409 naming the existing stay',
        body: CreateStayBody,
        response: { 201: Ok(Stay), ...STANDARD_ERRORS, ...CONFLICT_ERROR, ...BODY_ERRORS },
      },
    },
    async (request, reply) => {
      const stay = await createStay(db(), request.user!, request.body, app.jobs);
      reply.code(201);
      return ok(stay);
    },
  );

  app.post(
    '/bulk',
    {
      config: { access: ADMIN_MANAGER, scope: 'stays:write', bucket: 'bulk' },
      schema: {
        tags: ['stays'],
        operationId: 'bulkUpsertStays',
        summary: 'Create or replace 1–100 stays by externalRef; each item on its own, results in item order',
        description:
          'Each item is the body of PUT /stays/by-ref/:externalRef with its `externalRef`. Counts in the bulk ' +
          'rate-limit bucket.',
        body: BulkBody(BulkStayItem, [
          {
            externalRef: 'RES-104240',
            guestExternalRef: 'PROF-88231',
            room: '301',
            checkIn: '2030-02-01',
            checkOut: '2030-02-03',
          },
          {
            externalRef: 'RES-104241',
            guestId: 'gst_01jd8x3k5q7w9e2r4t6y8v0m1n',
            checkIn: '2030-02-05',
            checkOut: '2030-02-09',
            adults: 2,
            children: 1,
          },
        ]),
        response: { 200: BulkResponse(Stay), ...STANDARD_ERRORS, ...BODY_ERRORS },
      },
    },
    async (request) => {
      const user = request.user!;
      return runBulk<BulkStayInput, StayView>(
        request.body.items,
        BulkStayItem,
        async ({ externalRef, ...body }) => (await upsertStay(db(), user, externalRef, body, app.jobs)).stay,
        request.log,
      );
    },
  );

  app.put(
    '/by-ref/:externalRef',
    {
      config: {
        access: ADMIN_MANAGER,
        scope: 'stays:write',
        location: stayUrl,
        current: {
          table: 'stays',
          column: 'external_ref',
          param: 'externalRef',
          read: findStayByRef,
          upsert: true,
        },
      },
      schema: {
        tags: ['stays'],
        operationId: 'upsertStayByRef',
        summary: "Create (201) or replace (200) the stay with this externalRef, the PMS's reservation id",
        description: 'Fields left out take their defaults. Calling it again with the same body changes nothing.',
        params: RefParams,
        body: PutStayBody,
        response: { 200: Ok(Stay), 201: Ok(Stay), ...STANDARD_ERRORS, ...BODY_ERRORS },
      },
    },
    async (request, reply) => {
      const { stay, created } = await upsertStay(
        db(),
        request.user!,
        request.params.externalRef,
        request.body,
        app.jobs,
      );
      reply.code(created ? 201 : 200);
      return ok(stay);
    },
  );

  app.patch(
    '/:id',
    {
      config: { access: ADMIN_MANAGER, scope: 'stays:write', current: currentById('stays', findStay) },
      schema: {
        tags: ['stays'],
        operationId: 'updateStay',
        summary: 'Change a stay (admin, manager): any field; any status may move to any other',
        params: IdParams,
        body: UpdateStayBody,
        response: { 200: Ok(Stay), ...STANDARD_ERRORS, ...CONFLICT_ERROR, ...BODY_ERRORS },
      },
    },
    async (request) => ok(await updateStay(db(), request.user!, request.params.id, request.body, app.jobs)),
  );
};
