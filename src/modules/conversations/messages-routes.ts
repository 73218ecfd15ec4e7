// Owns /conversations/:id/messages: reading a conversation's messages oldest first and sending
// one (a text to the guest or an internal note); the same access as the conversation itself.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ANY_ROLE } from '../../lib/auth.js';
import { listPage } from '../../lib/pages.js';
import { BODY_ERRORS, IdParams, Ok, OkList, ok, STANDARD_ERRORS } from '../../lib/schemas.js';
import { listMessages, toMessage } from './messages-repository.js';
import { Message, MessagesQuery, SendMessageBody } from './schemas.js';
import { sendMessage, visibleConversationRef } from './service.js';

export const messagesRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const db = () => app.ctx.store;

  app.get(
    '/:id/messages',
    {
      config: { access: ANY_ROLE, scope: 'conversations:read', cache: true },
      schema: {
        tags: ['conversations'],
        operationId: 'listMessages',
        summary: "List a conversation's messages, oldest first",
        params: IdParams,
        querystring: MessagesQuery,
        response: { 200: OkList(Message), ...STANDARD_ERRORS },
      },
    },
    async (request, reply) => {
      const { id } = request.params;
      await visibleConversationRef(db(), request.user!, id);
      return listPage(request, reply, 'messages', (req) => listMessages(db(), { conversationId: id }, req), toMessage);
    },
  );

  app.post(
    '/:id/messages',
    {
      config: { access: ANY_ROLE, scope: 'conversations:write' },
      schema: {
        tags: ['conversations'],
        operationId: 'sendMessage',
        summary: 'Send a message to the guest, or add an internal note',
        description:
          'A `text` is stored outbound with deliveryStatus `queued` until channel delivery sends it. A `note` is ' +
          'internal to the team, never sent to the guest, and stored as `delivered`. Either updates the ' +
          "conversation's lastMessageAt and messageCount.",
        params: IdParams,
        body: SendMessageBody,
        response: { 201: Ok(Message), ...STANDARD_ERRORS, ...BODY_ERRORS },
      },
    },
    async (request, reply) => {
      const message = await sendMessage(db(), request.user!, request.params.id, request.body);
      reply.code(201);
      return ok(message);
    },
  );
};
