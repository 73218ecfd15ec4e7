// Owns /conversations/:id/messages: reading a conversation's messages oldest first and sending
// one (a text to the guest or an internal note); the same access as the conversation itself.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { ANY_ROLE } from '../../lib/auth.js';
import { notFound } from '../../lib/errors.js';
import { listPage } from '../../lib/pages.js';
import { BODY_ERRORS, errorResponse, IdParams, Ok, OkList, ok, STANDARD_ERRORS } from '../../lib/schemas.js';
import { fillFiles, withAttachments } from '../attachments/service.js';
import { retryMessage } from '../channels/retry.js';
import { findMessage, listMessages, toMessage } from './messages-repository.js';
import { Message, MessagesQuery, SendMessageBody } from './schemas.js';
import { sendMessage, visibleConversationRef } from './service.js';

export const messagesRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const db = () => app.ctx.store;

  app.get(
    '/:id/messages',
    {
      config: { access: ANY_ROLE, scope: 'conversations:read' },
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
      const page = await listPage(
        request,
        reply,
        'messages',
        (req) => listMessages(db(), { conversationId: id }, req),
        toMessage,
      );
      page.data = await withAttachments(db(), app.attachments.signer, page.data);
      return page;
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
          'A `text` is stored outbound with deliveryStatus `queued` and sent over the conversation channel after ' +
          'commit (`web`: `sent` at once); its progress arrives as `message.updated` events. A `note` is ' +
          'internal to the team, never sent to the guest, and stored as `delivered`. Either updates the ' +
          "conversation's lastMessageAt and messageCount.",
        params: IdParams,
        body: SendMessageBody,
        response: {
          201: Ok(Message),
          409: errorResponse('CONFLICT: WhatsApp 24-hour window closed; send a template message', 409),
          ...STANDARD_ERRORS,
          ...BODY_ERRORS,
        },
      },
    },
    async (request, reply) => {
      const message = await sendMessage(
        db(),
        request.user!,
        request.params.id,
        request.body,
        app.channelDispatcher,
        app.attachments,
      );
      reply.code(201);
      return ok(message);
    },
  );

  const MessageParams = Type.Object({
    id: Type.String({ minLength: 1, maxLength: 64 }),
    messageId: Type.String({ minLength: 1, maxLength: 64 }),
  });

  app.get(
    '/:id/messages/:messageId',
    {
      config: { access: ANY_ROLE, scope: 'conversations:read' },
      schema: {
        tags: ['conversations'],
        operationId: 'getMessage',
        summary: 'Get one message with its delivery state',
        params: MessageParams,
        response: { 200: Ok(Message), ...STANDARD_ERRORS },
      },
    },
    async (request) => {
      const { id, messageId } = request.params;
      await visibleConversationRef(db(), request.user!, id);
      const message = await findMessage(db(), id, messageId);
      if (message === undefined) throw notFound('Message', messageId);
      return ok((await withAttachments(db(), app.attachments.signer, [message]))[0]!);
    },
  );

  app.post(
    '/:id/messages/:messageId/retry',
    {
      config: { access: ANY_ROLE, scope: 'conversations:write' },
      schema: {
        tags: ['conversations'],
        operationId: 'retryMessage',
        summary: 'Send a failed text again',
        description:
          'The same message goes back to `queued` (its error cleared) and is sent again; no second message is ' +
          'created. 409 CONFLICT for anything but a failed outbound text.',
        params: MessageParams,
        response: { 200: Ok(Message), 409: errorResponse('CONFLICT: not a failed text', 409), ...STANDARD_ERRORS },
      },
    },
    async (request) => {
      const { id, messageId } = request.params;
      const fill = fillFiles(app.attachments.signer);
      return ok(await retryMessage(db(), request.user!, id, messageId, fill, app.channelDispatcher));
    },
  );
};
