// Owns POST /channels/email/inbound, where a mail relay hands over what guests e-mail: the relay
// proves itself by the HTTP Basic password, and the raw message is then read (payloads.ts) and
// stored (inbound.ts). Its own plugin: the message/rfc822 parser is its alone.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { forbidden, validation } from '../../lib/errors.js';
import { BODY_ERRORS, Ok, ok } from '../../lib/schemas.js';
import { receiveInbound } from './inbound.js';
import { readEmail } from './payloads.js';
import { DuplicateReceipt, InboundReceipt, PROVIDER, PROVIDER_ERRORS, receiptOf } from './schemas.js';
import { basicPasswordValid } from './signatures.js';

const MAX_EMAIL_BYTES = 25 * 1024 * 1024;

export const emailInboundRoute: FastifyPluginAsyncTypebox = async (mail) => {
  const cfg = () => mail.ctx.config.channels;
  // The message as sent, byte for byte; handed to the parser as latin1 text, which keeps every byte.
  mail.addContentTypeParser('message/rfc822', { parseAs: 'buffer', bodyLimit: MAX_EMAIL_BYTES }, (_r, body, done) =>
    done(null, (body as Buffer).toString('latin1')),
  );

  mail.post(
    '/email/inbound',
    {
      config: PROVIDER,
      bodyLimit: MAX_EMAIL_BYTES,
      preValidation: async (request) => {
        const secret = cfg().emailInboundSecret;
        if (secret === null) throw forbidden('EMAIL_INBOUND_SECRET is not configured on this server');
        if (!basicPasswordValid(secret, request.headers.authorization)) {
          throw forbidden('HTTP Basic auth with the EMAIL_INBOUND_SECRET password is required');
        }
      },
      schema: {
        tags: ['channels'],
        operationId: 'receiveEmail',
        summary: 'Receive an e-mail from a guest',
        description:
          'For a mail relay (an inbound-parse webhook, or a local MTA pipe): the raw RFC 822 message as the body ' +
          '(`Content-Type: message/rfc822`, at most 25 MiB), with HTTP Basic auth whose password is ' +
          '`EMAIL_INBOUND_SECRET`. The reply joins the conversation its In-Reply-To / References names, else the ' +
          "sender's latest e-mail conversation, else a new one with the e-mail's subject. The text part is " +
          'stored (attachments are counted, not kept), cut at 4096 characters. The same Message-ID is stored once; ' +
          'a repeat answers 200 with the stored message’s id only.',
        security: [{ emailInboundBasic: [] }],
        body: {
          content: {
            'message/rfc822': {
              schema: Type.String({ minLength: 1, maxLength: MAX_EMAIL_BYTES, description: 'RFC 822' }),
            },
          },
        },
        response: {
          200: Ok(DuplicateReceipt),
          201: Ok(InboundReceipt),
          ...PROVIDER_ERRORS,
          ...BODY_ERRORS,
        },
      },
    },
    async (request, reply) => {
      const inbound = await readEmail(Buffer.from(request.body as string, 'latin1'));
      if (inbound === null) throw validation([{ field: 'body', message: 'has no From address' }]);
      const r = await receiveInbound(mail.ctx.store, inbound, mail.channelDispatcher);
      reply.code(r.stored ? 201 : 200);
      return ok(receiptOf(r));
    },
  );
};
