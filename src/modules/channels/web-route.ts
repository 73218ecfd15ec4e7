// Owns POST /channels/web/inbound, where the hotel's chat widget backend (an admin or manager
// token, or a key with channels:inbound) hands over what a visitor wrote: a known guest, a visitor
// described by phone or e-mail, or an anonymous visitor known by the widget's own id. Message ids
// (`externalId`) and visitor ids are the caller's: another caller's same id is its own.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ADMIN_MANAGER } from '../../lib/auth.js';
import { BODY_ERRORS, Ok, ok, STANDARD_ERRORS } from '../../lib/schemas.js';
import { type Inbound, receiveInbound } from './inbound.js';
import { DuplicateReceipt, InboundReceipt, messageLocation, receiptOf, WebInboundBody } from './schemas.js';

export const webInboundRoute: FastifyPluginAsyncTypebox = async (web) => {
  web.post(
    '/web/inbound',
    {
      config: { access: ADMIN_MANAGER, scope: 'channels:inbound', bucket: 'channels', location: messageLocation },
      schema: {
        tags: ['channels'],
        operationId: 'receiveWebMessage',
        summary: 'Receive a message from the web chat widget',
        description:
          "Called by the hotel's chat widget backend: name a known guest by `guestId`, or describe the visitor in " +
          '`guest`: an anonymous visitor by the widget’s own `visitorId` (the same caller naming it again reaches ' +
          'the same guest; another caller’s same id is a guest of its own), or by phone or e-mail (matched, else a ' +
          'new guest). The message joins the guest’s latest web ' +
          'conversation (a closed one reopens), else a new one. An `externalId` is the caller’s (the API key, or ' +
          'the staff member): the same caller posting it again changes nothing and is answered 200 with ' +
          '`duplicate: true` and the stored message’s id only; another caller’s same id is a message of its own.',
        body: WebInboundBody,
        response: { 200: Ok(DuplicateReceipt), 201: Ok(InboundReceipt), ...STANDARD_ERRORS, ...BODY_ERRORS },
      },
    },
    async (request, reply) => {
      // The schema holds the rules across fields: exactly one of guestId and guest, and a guest
      // known by an e-mail, a phone or a visitorId.
      const b = request.body;
      const caller = request.user!.id;
      const { visitorId, ...visitor } = b.guest ?? {};
      const inbound: Inbound = {
        channel: 'web',
        sender:
          b.guestId !== undefined
            ? { guestId: b.guestId }
            : { ...visitor, ...(visitorId !== undefined ? { visitor: { caller, id: visitorId } } : {}) },
        content: b.content ?? '',
        providerId: b.externalId ?? null,
        ...(b.attachments !== undefined
          ? { files: b.attachments.map((id) => ({ kind: 'upload' as const, id, by: caller })) }
          : {}),
        // Unique per caller: another widget naming the same id must not find (or block) this one.
        ...(b.externalId !== undefined ? { dedupKey: `web#${caller}:${b.externalId}` } : {}),
      };
      const r = await receiveInbound(web.ctx.store, inbound, web.channelDispatcher, web.inboundFiles);
      reply.code(r.stored ? 201 : 200);
      return ok(receiptOf(r));
    },
  );
};
