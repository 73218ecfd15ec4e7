// Owns /staff: list and get (admin and manager see all, staff see themselves), create and
// update (admin only). A department must be one the `departments` setting lists.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { isUniqueViolation } from '../../db/store.js';
import { ownerFilter, visibleTo } from '../../lib/access.js';
import { ADMIN, ANY_ROLE } from '../../lib/auth.js';
import { conflict } from '../../lib/errors.js';
import { listPage } from '../../lib/pages.js';
import { generatePassword, hashPassword } from '../../lib/password.js';
import { BODY_ERRORS, CONFLICT_ERROR, IdParams, Ok, OkList, ok, STANDARD_ERRORS } from '../../lib/schemas.js';
import { recordEvents, staffActor } from '../events/emit.js';
import { withEvents } from '../events/outbox.js';
import { checkDepartment } from '../settings/repository.js';
import { countActiveAdminsForUpdate, findStaff, insertStaff, listStaff, toStaff, updateStaff } from './repository.js';
import { CreatedStaff, CreateStaffBody, ListStaffQuery, Staff, UpdateStaffBody } from './schemas.js';

export const staffRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const db = () => app.ctx.store;

  app.get(
    '/',
    {
      config: { access: ANY_ROLE },
      schema: {
        tags: ['staff'],
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
      config: { access: ANY_ROLE },
      schema: {
        tags: ['staff'],
        summary: 'Get a staff member (a staff-role caller may get only themselves)',
        params: IdParams,
        response: { 200: Ok(Staff), ...STANDARD_ERRORS },
      },
    },
    async (request) => {
      const { id } = request.params;
      return ok(visibleTo(request.user!, await findStaff(db(), id), (s) => s.id, 'Staff member', id));
    },
  );

  app.post(
    '/',
    {
      config: { access: ADMIN },
      schema: {
        tags: ['staff'],
        summary: 'Create a staff member (admin); without a password a one-time temporaryPassword is returned',
        body: CreateStaffBody,
        response: { 201: Ok(CreatedStaff), ...STANDARD_ERRORS, ...CONFLICT_ERROR, ...BODY_ERRORS },
      },
    },
    async (request, reply) => {
      const body = request.body;
      await checkDepartment(db(), body.department);
      const temporaryPassword = body.password === undefined ? generatePassword() : undefined;
      const passwordHash = await hashPassword(body.password ?? temporaryPassword!);
      try {
        const staff = await withEvents(db(), async (tx, outbox) => {
          const created = await insertStaff(tx, {
            name: body.name,
            email: body.email,
            role: body.role,
            department: body.department ?? null,
            passwordHash,
          });
          recordEvents(outbox, 'staff', staffActor(request.user!), null, created);
          return created;
        });
        reply.code(201);
        return ok(temporaryPassword === undefined ? staff : { ...staff, temporaryPassword });
      } catch (err) {
        if (isUniqueViolation(err)) {
          throw conflict('A staff member with this email already exists', [
            { field: 'email', message: 'is already in use' },
          ]);
        }
        throw err;
      }
    },
  );

  app.patch(
    '/:id',
    {
      config: { access: ADMIN },
      schema: {
        tags: ['staff'],
        summary: 'Update a staff member: name, role, department, active (admin)',
        params: IdParams,
        body: UpdateStaffBody,
        response: { 200: Ok(Staff), ...STANDARD_ERRORS, ...CONFLICT_ERROR, ...BODY_ERRORS },
      },
    },
    async (request) => {
      const { id } = request.params;
      const body = request.body;
      await checkDepartment(db(), body.department);
      const updated = await withEvents(app.ctx.store, async (tx, outbox) => {
        const current = visibleTo(request.user!, await findStaff(tx, id), (s) => s.id, 'Staff member', id);
        const losesAdmin =
          current.role === 'admin' && current.active && (body.active === false || (body.role ?? 'admin') !== 'admin');
        if (losesAdmin && (await countActiveAdminsForUpdate(tx)) <= 1) {
          throw conflict('This is the last active admin; promote another admin first');
        }
        const after = (await updateStaff(tx, id, body))!;
        recordEvents(outbox, 'staff', staffActor(request.user!), current, after);
        return after;
      });
      return ok(updated!);
    },
  );
};
