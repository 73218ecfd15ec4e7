// Owns /staff: list and get (admin and manager see all, staff see themselves), create and
// update (admin only; an API key only for members of role staff); the rules are in service.ts.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ownerFilter } from '../../lib/access.js';
import { ADMIN, ANY_ROLE } from '../../lib/auth.js';
import { currentById } from '../../lib/etag.js';
import { listPage } from '../../lib/pages.js';
import { BODY_ERRORS, CONFLICT_ERROR, IdParams, Ok, OkList, ok, STANDARD_ERRORS } from '../../lib/schemas.js';
import { auditTrail } from '../audit/trail.js';
import { findStaff, listStaff, toStaff } from './repository.js';
import { CreatedStaff, CreateStaffBody, ListStaffQuery, Staff, UpdateStaffBody } from './schemas.js';
import { createStaff, updateStaff, visibleStaff } from './service.js';

export const staffRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const db = () => app.ctx.store;

  app.get(
    '/',
    {
      config: { access: ANY_ROLE, scope: 'staff:read' },
      schema: {
        tags: ['staff'],
        operationId: 'listStaff',
        summary: 'List staff members, by name (a staff-role caller sees only themselves)',
        querystring: ListStaffQuery,
        response: { 200: OkList(Staff), ...STANDARD_ERRORS },
      },
    },
    async (request, reply) => {
      const { role, department, active } = request.query;
      const filter = { role, department, active, onlyId: ownerFilter(request.user!) };
      return listPage(request, reply, 'staff', (req) => listStaff(db(), filter, req), toStaff);
    },
  );

  app.get(
    '/:id',
    {
      config: { access: ANY_ROLE, scope: 'staff:read' },
      schema: {
        tags: ['staff'],
        operationId: 'getStaff',
        summary: 'Get a staff member (a staff-role caller may get only themselves)',
        params: IdParams,
        response: { 200: Ok(Staff), ...STANDARD_ERRORS },
      },
    },
    async (request) => {
      return ok(await visibleStaff(db(), request.user!, request.params.id));
    },
  );

  app.post(
    '/',
    {
      config: { access: ADMIN, scope: 'staff:write' },
      schema: {
        tags: ['staff'],
        operationId: 'createStaff',
        summary: 'Create a staff member (admin); without a password a one-time temporaryPassword is returned',
        description:
          'An API key creates members of role `staff` only and never sets a password (403 FORBIDDEN otherwise).',
        body: CreateStaffBody,
        response: { 201: Ok(CreatedStaff), ...STANDARD_ERRORS, ...CONFLICT_ERROR, ...BODY_ERRORS },
      },
    },
    async (request, reply) => {
      const staff = await createStaff(db(), request.user!, request.body, auditTrail(request));
      reply.code(201);
      return ok(staff);
    },
  );

  app.patch(
    '/:id',
    {
      config: { access: ADMIN, scope: 'staff:write', current: currentById('staff', findStaff) },
      schema: {
        tags: ['staff'],
        operationId: 'updateStaff',
        summary: 'Update a staff member: name, role, department, active (admin)',
        description:
          'An API key changes members of role `staff` only and makes no one an admin or a manager (403 FORBIDDEN otherwise).',
        params: IdParams,
        body: UpdateStaffBody,
        response: { 200: Ok(Staff), ...STANDARD_ERRORS, ...CONFLICT_ERROR, ...BODY_ERRORS },
      },
    },
    async (request) =>
      ok(await updateStaff(db(), app.ctx.counter, request.user!, request.params.id, request.body, auditTrail(request))),
  );
};
