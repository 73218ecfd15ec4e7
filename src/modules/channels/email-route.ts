// Owns POST /channels/email/inbound, where a mail relay hands over what guests e-mail: the relay
// proves itself by the HTTP Basic password before a byte of the body is read (so does the body's
// type, and its announced length against the 10 MiB cap), and the raw message is then read
// (payloads.ts) and stored (inbound.ts). Its own plugin: the message/rfc822 parser is its alone.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { AppError, validation } from '../../lib/errors.js';
import { errorResponse, Ok, ok } from '../../lib/schemas.js';
import { receiveInbound } from './inbound.js';
import { readEmail } from './payloads.js';
import { DuplicateReceipt, InboundReceipt, messageLocation, PROVIDER, PROVIDER_ERRORS, receiptOf } from './schemas.js';
import { basicPasswordValid } from './signatures.js';

/** An inbound e-mail's size at most: a guest's text with a few photos; its text alone is kept. */
const MAX_EMAIL_BYTES = 10 * 1024 * 1024;

/** A request refused before its body is read: the connection closes rather than take the rest. */
const unread = (code: 'FORBIDDEN' | 'UNSUPPORTED_MEDIA_TYPE' | 'PAYLOAD_TOO_LARGE', message: string) =>
  new AppError(code, message, undefined, { connection: 'close' });

export const emailInboundRoute: FastifyPluginAsyncTypebox = async (mail) => {
  const cfg = () => mail.ctx.config.channels;
  // The message as sent, byte for byte; handed to the parser as latin1 text, which keeps every byte.
  mail.addContentTypeParser('message/rfc822', { parseAs: 'buffer', bodyLimit: MAX_EMAIL_BYTES }, (_r, body, done) =>
    done(null, (body as Buffer).toString('latin1')),
  );

  mail.post(
    '/email/inbound',
    {
      config: { ...PROVIDER, location: messageLocation },
      bodyLimit: MAX_EMAIL_BYTES,
      // Before the body is read: a caller without the password, or with a body that is not an
      // e-mail or is announced too large, costs the headers only.
      onRequest: async (request) => {
        const secret = cfg().emailInboundSecret;
        if (secret === null) throw unread('FORBIDDEN', 'EMAIL_INBOUND_SECRET is not configured on this server');
        if (!basicPasswordValid(secret, request.headers.authorization)) {
          throw unread('FORBIDDEN', 'HTTP Basic auth with the EMAIL_INBOUND_SECRET password is required');
        }
        const type = (request.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
        if (type !== 'message/rfc822') {
          throw unread('UNSUPPORTED_MEDIA_TYPE', 'Send the raw e-mail as the body, with Content-Type: message/rfc822');
        }
        if (Number(request.headers['content-length'] ?? 0) > MAX_EMAIL_BYTES) {
          throw unread('PAYLOAD_TOO_LARGE', 'The e-mail is larger than 10 MiB');
        }
      },
      schema: {
        tags: ['channels'],
        operationId: 'receiveEmail',
        summary: 'Receive an e-mail from a guest',
        description:
          'For a mail relay (an inbound-parse webhook, or a local MTA pipe): the raw RFC 822 message as the body ' +
          '(`Content-Type: message/rfc822`, at most 10 MiB), with HTTP Basic auth whose password is ' +
          '`EMAIL_INBOUND_SECRET`, checked before the body is read. The reply joins the conversation its ' +
          'In-Reply-To / References names when the sender is that conversation’s guest, else the ' +
          "sender's latest e-mail conversation, else a new one with the e-mail's subject. The text part is " +
          'stored (else the text of the first 1 MiB of HTML; attachments are counted, not kept), cut at 4096 ' +
          'characters. The same Message-ID (without one: the same authored headers and body) is stored once; ' +
          'a repeat answers 200 with the stored message’s id only. Automated mail (Auto-Submitted, bulk or ' +
          'list mail, bounces) is stored but never auto-replied to.',
        security: [{ emailInboundBasic: [] }],
        body: {
          content: {
            'message/rfc822': {
              schema: Type.String({
                minLength: 1,
                maxLength: MAX_EMAIL_BYTES,
                description: 'RFC 822',
                examples: [
                  [
                    'From: Ana Lopes <ana.lopes@example.com>',
                    'To: Front Desk <frontdesk@hotel.example.com>',
                    'Subject: Late check-out',
                    'Message-ID: <CAF3k9x2q7.ana@mail.example.com>',
                    'Date: Sun, 22 Nov 2026 06:33:12 +0000',
                    'MIME-Version: 1.0',
                    'Content-Type: text/plain; charset=utf-8',
                    '',
                    'Hello! Could we check out at 14:00 on Sunday?',
                    '',
                  ].join('\r\n'),
                ],
              }),
            },
          },
        },
        response: {
          200: Ok(DuplicateReceipt),
          201: Ok(InboundReceipt),
          ...PROVIDER_ERRORS,
          413: errorResponse('PAYLOAD_TOO_LARGE: the e-mail is larger than 10 MiB', 413),
          415: errorResponse('UNSUPPORTED_MEDIA_TYPE: the body is not sent as message/rfc822', 415),
        },
      },
    },
    async (request, reply) => {
      const inbound = await readEmail(request.body as string);
      if (inbound === null) throw validation([{ field: 'body', message: 'has no From address' }]);
      const r = await receiveInbound(mail.ctx.store, inbound, mail.channelDispatcher);
      reply.code(r.stored ? 201 : 200);
      return ok(receiptOf(r));
    },
  );
};
