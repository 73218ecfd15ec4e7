// Owns /guests: list and get (admin and manager see all, staff only guests of their own
// conversations and tasks), create, bulk create and update (admin, manager). E-mail (any case)
// and phone are unique: a second guest with either is a 409 naming the existing guest.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Static } from 'typebox';
import { isUniqueViolation } from '../../db/store.js';
import type { Executor } from '../../db/types.js';
import { isElevated, ownerFilter, visibleTo } from '../../lib/access.js';
import { ADMIN_MANAGER, ANY_ROLE } from '../../lib/auth.js';
import { BulkBody, BulkResponse, runBulk } from '../../lib/bulk.js';
import { type AppError, conflict, notFound } from '../../lib/errors.js';
import { listPage } from '../../lib/pages.js';
import { BODY_ERRORS, CONFLICT_ERROR, IdParams, Ok, OkList, ok, STANDARD_ERRORS } from '../../lib/schemas.js';
import { recordEvents, staffActor } from '../events/emit.js';
import { type Outbox, withEvents } from '../events/outbox.js';
import type { Actor } from '../events/schemas.js';
import {
  findConflicts,
  findGuest,
  type GuestConflict,
  type GuestView,
  insertGuest,
  isGuestOfStaff,
  listGuests,
  toGuest,
  updateGuest,
} from './repository.js';
import { CreateGuestBody, Guest, ListGuestsQuery, UpdateGuestBody } from './schemas.js';

type CreateGuest = Static<typeof CreateGuestBody>;
type UpdateGuest = Static<typeof UpdateGuestBody>;

function conflictError(found: GuestConflict[]): AppError {
  const fields = found.map((c) => c.field).join(' and ');
  return conflict(`Another guest already has this ${fields}`, found);
}

async function assertNoConflict(
  db: Executor,
  values: { email?: string | null; phone?: string | null },
  exceptId?: string,
) {
  const found = await findConflicts(db, values, exceptId);
  if (found.length > 0) throw conflictError(found);
}

export const guestsRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const db = () => app.ctx.store;

  /**
   * Runs a write in its own transaction. A concurrent writer can take the e-mail or phone between
   * the check inside `work` and the write; the unique index then refuses it, and once the
   * transaction has rolled back (PostgreSQL answers nothing inside an aborted one) we name the winner.
   */
  async function writeGuest(
    values: { email?: string | null; phone?: string | null },
    exceptId: string | undefined,
    work: (tx: Executor, outbox: Outbox) => Promise<GuestView>,
  ): Promise<GuestView> {
    try {
      return await withEvents(db(), work);
    } catch (err) {
      if (!isUniqueViolation(err)) throw err;
      const found = await findConflicts(db(), values, exceptId);
      throw found.length > 0 ? conflictError(found) : conflict('Another guest already has this email or phone');
    }
  }

  const create = (body: CreateGuest, actor: Actor) =>
    writeGuest(body, undefined, async (tx, outbox) => {
      await assertNoConflict(tx, body);
      const guest = await insertGuest(tx, body);
      recordEvents(outbox, 'guest', actor, null, guest);
      return guest;
    });

  app.get(
    '/',
    {
      config: { access: ANY_ROLE, cache: true },
      schema: {
        tags: ['guests'],
        summary: 'List guests, newest first; search name/e-mail/phone, filter by tag (staff: own guests only)',
        querystring: ListGuestsQuery,
        response: { 200: OkList(Guest), ...STANDARD_ERRORS },
      },
    },
    async (request, reply) => {
      const { search, tag } = request.query;
      const filter = { search: search?.trim(), tag, assignee: ownerFilter(request.user!) };
      return listPage(request, reply, 'guests', (req) => listGuests(db(), filter, req), toGuest);
    },
  );

  app.get(
    '/:id',
    {
      config: { access: ANY_ROLE },
      schema: {
        tags: ['guests'],
        summary: 'Get a guest (staff: only a guest of a conversation or task assigned to them)',
        params: IdParams,
        response: { 200: Ok(Guest), ...STANDARD_ERRORS },
      },
    },
    async (request) => {
      const { id } = request.params;
      const user = request.user!;
      const guest = await findGuest(db(), id);
      // A guest has no single owner: a staff member "owns" it through their assignments.
      const mine = guest !== undefined && !isElevated(user) && (await isGuestOfStaff(db(), id, user.id));
      return ok(visibleTo(user, guest, () => (mine ? user.id : null), 'Guest', id));
    },
  );

  app.post(
    '/',
    {
      config: { access: ADMIN_MANAGER },
      schema: {
        tags: ['guests'],
        summary: 'Create a guest (admin, manager); a taken e-mail or phone is a 409 naming the existing guest',
        body: CreateGuestBody,
        response: { 201: Ok(Guest), ...STANDARD_ERRORS, ...CONFLICT_ERROR, ...BODY_ERRORS },
      },
    },
    async (request, reply) => {
      const guest = await create(request.body, staffActor(request.user!));
      reply.code(201);
      return ok(guest);
    },
  );

  app.post(
    '/bulk',
    {
      config: { access: ADMIN_MANAGER, bucket: 'bulk' },
      schema: {
        tags: ['guests'],
        summary: 'Create 1–100 guests; each item is validated and created on its own, results in item order',
        body: BulkBody,
        response: { 200: BulkResponse(Guest), ...STANDARD_ERRORS, ...BODY_ERRORS },
      },
    },
    async (request) => {
      const actor = staffActor(request.user!);
      return runBulk<CreateGuest, GuestView>(
        request.body.items,
        CreateGuestBody,
        (item) => create(item, actor),
        request.log,
      );
    },
  );

  app.patch(
    '/:id',
    {
      config: { access: ADMIN_MANAGER },
      schema: {
        tags: ['guests'],
        summary: 'Update a guest: name, email, phone, tags (replace the set), notes (admin, manager)',
        params: IdParams,
        body: UpdateGuestBody,
        response: { 200: Ok(Guest), ...STANDARD_ERRORS, ...CONFLICT_ERROR, ...BODY_ERRORS },
      },
    },
    async (request) => {
      const { id } = request.params;
      const body: UpdateGuest = request.body;
      const updated = await writeGuest(body, id, async (tx, outbox) => {
        const current = await findGuest(tx, id);
        if (current === undefined) throw notFound('Guest', id);
        await assertNoConflict(tx, body, id);
        const after = await updateGuest(tx, current, body);
        recordEvents(outbox, 'guest', staffActor(request.user!), current, after);
        return after;
      });
      return ok(updated);
    },
  );
};
