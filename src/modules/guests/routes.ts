// Owns /guests: list and get (admin and manager see all, staff only guests of their own
// conversations and tasks), create, bulk create and update (admin, manager); the rules are in
// service.ts; a guest's export and erase (docs/data-rights.md).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ownerFilter } from '../../lib/access.js';
import { ADMIN, ADMIN_MANAGER, ANY_ROLE } from '../../lib/auth.js';
import { BulkBody, BulkResponse, runBulk } from '../../lib/bulk.js';
import { notFound } from '../../lib/errors.js';
import { currentById } from '../../lib/etag.js';
import { listPage } from '../../lib/pages.js';
import { BODY_ERRORS, CONFLICT_ERROR, IdParams, Ok, OkList, ok, STANDARD_ERRORS } from '../../lib/schemas.js';
import { auditTrail, ref } from '../audit/trail.js';
import { currentStays } from '../stays/current.js';
import { GuestExport } from './data-rights-schemas.js';
import { eraseGuest } from './erase.js';
import { exportStream } from './export.js';
import { findGuest, findGuestByRef, type GuestView, listGuests, toGuest } from './repository.js';
import { CreateGuestBody, Guest, GuestRefParams, ListGuestsQuery, PutGuestBody, UpdateGuestBody } from './schemas.js';
import { type CreateGuest, createGuest, updateGuest, upsertGuest, visibleGuest } from './service.js';

export const guestsRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const db = () => app.ctx.store;

  app.get(
    '/',
    {
      config: { access: ANY_ROLE, scope: 'guests:read' },
      schema: {
        tags: ['guests'],
        operationId: 'listGuests',
        summary: 'List guests, newest first; search name/e-mail/phone, filter by tag (staff: own guests only)',
        description:
          '`email` (any case), `phone` and `externalRef` find the guest holding exactly that value (a PMS ' +
          "looking up its profile). Each guest carries `stay`, its current stay in the hotel's time zone.",
        querystring: ListGuestsQuery,
        response: { 200: OkList(Guest), ...STANDARD_ERRORS },
      },
    },
    async (request, reply) => {
      const { search, tag, email, phone, externalRef } = request.query;
      const filter = { search: search?.trim(), tag, email, phone, externalRef, assignee: ownerFilter(request.user!) };
      return listPage(
        request,
        reply,
        'guests',
        async (req) => {
          const page = await listGuests(db(), filter, req);
          // The page's current stays in one statement, not one per guest.
          const stays = await currentStays(
            db(),
            page.rows.map((r) => r.id),
          );
          return { ...page, rows: page.rows.map((r) => ({ ...r, stay: stays.get(r.id) ?? null })) };
        },
        toGuest,
      );
    },
  );

  app.get(
    '/:id',
    {
      config: { access: ANY_ROLE, scope: 'guests:read' },
      schema: {
        tags: ['guests'],
        operationId: 'getGuest',
        summary: 'Get a guest (staff: only a guest of a conversation or task assigned to them)',
        params: IdParams,
        response: { 200: Ok(Guest), ...STANDARD_ERRORS },
      },
    },
    async (request) => {
      return ok(await visibleGuest(db(), request.user!, request.params.id));
    },
  );

  app.post(
    '/',
    {
      config: { access: ADMIN_MANAGER, scope: 'guests:write' },
      schema: {
        tags: ['guests'],
        operationId: 'createGuest',
        summary: 'Create a guest (admin, manager); a taken e-mail or phone is a 409 naming the existing guest',
        body: CreateGuestBody,
        response: { 201: Ok(Guest), ...STANDARD_ERRORS, ...CONFLICT_ERROR, ...BODY_ERRORS },
      },
    },
    async (request, reply) => {
      const guest = await createGuest(db(), request.user!, request.body);
      reply.code(201);
      return ok(guest);
    },
  );

  app.post(
    '/bulk',
    {
      config: { access: ADMIN_MANAGER, scope: 'guests:write', bucket: 'bulk' },
      schema: {
        tags: ['guests'],
        operationId: 'bulkCreateGuests',
        summary: 'Create 1–100 guests; each item is validated and created on its own, results in item order',
        body: BulkBody(CreateGuestBody, [
          { name: 'Rui Costa', email: 'rui.costa@example.com', phone: '+351913456789', tags: ['returning'] },
          { name: 'Mia Schmidt', email: 'mia.schmidt@example.de', notes: 'Arrives late, around 23:00' },
        ]),
        response: { 200: BulkResponse(Guest), ...STANDARD_ERRORS, ...BODY_ERRORS },
      },
    },
    async (request) => {
      const user = request.user!;
      return runBulk<CreateGuest, GuestView>(
        request.body.items,
        CreateGuestBody,
        (item) => createGuest(db(), user, item),
        request.log,
      );
    },
  );

  app.put(
    '/by-ref/:externalRef',
    {
      config: {
        access: ADMIN_MANAGER,
        scope: 'guests:write',
        location: (data) => `/api/v1/guests/${encodeURIComponent(String(data.id))}`,
        current: { table: 'guests', column: 'external_ref', param: 'externalRef', read: findGuestByRef, upsert: true },
      },
      schema: {
        tags: ['guests'],
        operationId: 'upsertGuestByRef',
        summary: "Create (201) or update (200) the guest with this externalRef, the PMS's profile id (admin, manager)",
        description:
          "The fields given are set and those left out kept (tags and notes may be the hotel team's); attributes " +
          'merge as on PATCH. An e-mail or phone another guest holds is a 409 naming that guest: link it by ' +
          'PATCHing its externalRef. Calling it again with the same body changes nothing.',
        params: GuestRefParams,
        body: PutGuestBody,
        response: { 200: Ok(Guest), 201: Ok(Guest), ...STANDARD_ERRORS, ...CONFLICT_ERROR, ...BODY_ERRORS },
      },
    },
    async (request, reply) => {
      const { guest, created } = await upsertGuest(db(), request.user!, request.params.externalRef, request.body);
      reply.code(created ? 201 : 200);
      return ok(guest);
    },
  );

  app.patch(
    '/:id',
    {
      config: { access: ADMIN_MANAGER, scope: 'guests:write', current: currentById('guests', findGuest) },
      schema: {
        tags: ['guests'],
        operationId: 'updateGuest',
        summary: 'Update a guest: name, email, phone, tags (replace the set), notes (admin, manager)',
        params: IdParams,
        body: UpdateGuestBody,
        response: { 200: Ok(Guest), ...STANDARD_ERRORS, ...CONFLICT_ERROR, ...BODY_ERRORS },
      },
    },
    async (request) => ok(await updateGuest(db(), request.user!, request.params.id, request.body)),
  );

  app.get(
    '/:id/export',
    {
      config: { access: ADMIN_MANAGER, scope: 'guests:read' },
      schema: {
        tags: ['guests'],
        operationId: 'exportGuest',
        summary: 'Everything held about a guest, as one JSON document (GDPR arts. 15, 20; admin, manager)',
        description:
          'The guest, their stays, their conversations each with its messages and files, the tasks about them and ' +
          'the events naming them. Written as it is read, a page at a time: a long history streams. Audited ' +
          '`guest.exported` (the caller, staff or API key, as actor).',
        params: IdParams,
        response: { 200: Ok(GuestExport), ...STANDARD_ERRORS },
      },
    },
    async (request, reply) => {
      const guest = await findGuest(db(), request.params.id);
      if (guest === undefined) throw notFound('Guest', request.params.id);
      // Who took a guest's whole record is accountable (GDPR art. 5(2)): recorded before the first
      // byte leaves, so an export cut short is still in the log (docs/data-rights.md).
      const trail = auditTrail(request);
      await db().transact((tx) => trail.record(tx, 'guest.exported', ref('guest', guest.id)));
      reply.type('application/json; charset=utf-8');
      return reply.send(exportStream(db(), app.attachments.signer, guest));
    },
  );

  app.post(
    '/:id/erase',
    {
      // No scope: an API key may not erase (a 403 saying it takes a staff token).
      config: { access: ADMIN },
      schema: {
        tags: ['guests'],
        operationId: 'eraseGuest',
        summary: "Erase a guest's personal data for good (GDPR art. 17; admin's own token); idempotent",
        description:
          'The guest becomes `Erased guest` without e-mail, phone, notes, tags, attributes or externalRef; their ' +
          'messages read `[erased]`, their files are deleted, and events, queued webhook payloads and stored ' +
          'idempotent answers naming them are redacted (docs/data-rights.md). Audited `guest.erased`; ' +
          'emits `guest.erased`. Erasing again answers the same guest and changes nothing.',
        params: IdParams,
        response: { 200: Ok(Guest), ...STANDARD_ERRORS },
      },
    },
    async (request) => {
      const { config, store } = app.ctx;
      const deps = { store, blobs: app.attachments.blobs, secrets: [config.jwtSecret, ...config.jwtPreviousSecrets] };
      return ok(await eraseGuest(deps, request.user!, request.params.id, auditTrail(request)));
    },
  );
};
