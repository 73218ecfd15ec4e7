// Owns POST /channels/email/inbound (and /inbound/mime, the same route at the address Mailgun's
// MIME forwarding needs), where a mail relay hands over what guests e-mail, raw or the way SendGrid,
// Mailgun and Postmark post it (relay-forms.ts). The relay proves itself by the HTTP Basic password
// before a byte of the body is read (so does the body's type, and its announced length against the
// 10 MiB cap); the message is then read (email-read.ts) and stored (inbound.ts). Its own plugin:
// the message/rfc822 and multipart parsers are its alone.
import multipart from '@fastify/multipart';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { AppError, validation } from '../../lib/errors.js';
import { errorResponse, Ok, ok } from '../../lib/schemas.js';
import { readEmail, readPostmark } from './email-read.js';
import {
  EncodedRelayForm,
  MAX_EMAIL_BYTES,
  MultipartRelayForm,
  PostmarkInbound,
  RawEmailBody,
} from './email-schemas.js';
import { receiveInbound } from './inbound.js';
import {
  ACCEPTED,
  hasRawField,
  isPostmark,
  MEDIA_TYPES,
  mediaTypeOf,
  RAW_FIELDS,
  readForm,
  tooLarge,
  unread,
} from './relay-forms.js';
import { DuplicateReceipt, InboundReceipt, messageLocation, PROVIDER, PROVIDER_ERRORS, receiptOf } from './schemas.js';
import { basicPasswordValid } from './signatures.js';

const DESCRIPTION =
  'For a mail relay (an inbound-parse webhook, or a local MTA pipe), with HTTP Basic auth whose password is ' +
  '`EMAIL_INBOUND_SECRET`, checked before the body is read. The body (at most 10 MiB) is the raw RFC 822 ' +
  'message (`message/rfc822`); or SendGrid Inbound Parse in raw mode (`multipart/form-data`, the message in ' +
  '`email`); or Mailgun’s MIME form (the message in `body-mime`, multipart or form-encoded; Mailgun posts it ' +
  'only to a URL ending in `mime`, hence `/email/inbound/mime`); or Postmark’s inbound JSON (its `RawEmail` ' +
  'when present, else its parsed fields: `From`/`FromFull`, `Subject`, `TextBody`/`HtmlBody`, and the ' +
  'Message-ID, In-Reply-To, References and Auto-Submitted of `Headers`). A body in none of these is 415. ' +
  'The reply joins the conversation its In-Reply-To / References names when the sender is that ' +
  "conversation’s guest, else the sender's latest e-mail conversation, else a new one with the e-mail's " +
  'subject. The text part is stored (else the text of the first 1 MiB of HTML; attachments are counted, not ' +
  'kept), cut at 4096 characters. The same Message-ID (without one: the same authored headers and body, or ' +
  'Postmark’s MessageID) is stored once, whichever way it came; a repeat answers 200 with the stored ' +
  'message’s id only. Automated mail (Auto-Submitted, bulk or list mail, bounces) is stored but never ' +
  'auto-replied to.';

/** The raw message of a relay's form or JSON as latin1 text of its bytes; forms are read as bytes already. */
const bytesOf = (text: string) => Buffer.from(text, 'utf8').toString('latin1');

export const emailInboundRoute: FastifyPluginAsyncTypebox = async (mail) => {
  const cfg = () => mail.ctx.config.channels;
  // The message as sent, byte for byte; handed to the parser as latin1 text, which keeps every byte.
  mail.addContentTypeParser('message/rfc822', { parseAs: 'buffer', bodyLimit: MAX_EMAIL_BYTES }, (_r, body, done) =>
    done(null, (body as Buffer).toString('latin1')),
  );
  // Forms are read by the route (relay-forms.ts), part by part, after the password.
  await mail.register(multipart, { limits: { fileSize: MAX_EMAIL_BYTES } });

  /** Before the body is read: a caller without the password, or a body the route cannot take, costs the headers only. */
  const screen = async (request: FastifyRequest) => {
    const secret = cfg().emailInboundSecret;
    if (secret === null) throw unread('FORBIDDEN', 'EMAIL_INBOUND_SECRET is not configured on this server');
    if (!basicPasswordValid(secret, request.headers.authorization)) {
      throw unread('FORBIDDEN', 'HTTP Basic auth with the EMAIL_INBOUND_SECRET password is required');
    }
    if (!(MEDIA_TYPES as readonly string[]).includes(mediaTypeOf(request))) {
      throw unread('UNSUPPORTED_MEDIA_TYPE', ACCEPTED);
    }
    if (Number(request.headers['content-length'] ?? 0) > MAX_EMAIL_BYTES) throw tooLarge();
  };

  /** Once the body is in: a form read into its raw-message fields, and a body in no accepted form refused. */
  const accepted = async (request: FastifyRequest) => {
    const type = mediaTypeOf(request);
    if (type === 'multipart/form-data') request.body = await readForm(request);
    if (type === 'application/x-www-form-urlencoded') {
      const form = request.body as Record<string, string>;
      for (const f of RAW_FIELDS) if (typeof form[f] === 'string') form[f] = bytesOf(form[f]);
    }
    const known =
      type === 'application/json' ? isPostmark(request.body) : type === 'message/rfc822' || hasRawField(request.body);
    if (!known) throw new AppError('UNSUPPORTED_MEDIA_TYPE', ACCEPTED);
  };

  /**
   * `created`: the status of a newly stored e-mail. Mailgun takes only 200 as success and retries any
   * other code for 8 hours, so its address answers 200 for a new e-mail too (with the whole receipt).
   */
  const route = (url: string, operationId: string, summary: string, created: 200 | 201) =>
    mail.post(
      url,
      {
        config: { ...PROVIDER, location: messageLocation },
        bodyLimit: MAX_EMAIL_BYTES,
        onRequest: screen,
        preValidation: accepted,
        schema: {
          tags: ['channels'],
          operationId,
          summary,
          description: DESCRIPTION,
          security: [{ emailInboundBasic: [] }],
          body: {
            content: {
              'message/rfc822': { schema: RawEmailBody },
              'multipart/form-data': { schema: MultipartRelayForm },
              'application/x-www-form-urlencoded': { schema: EncodedRelayForm },
              'application/json': { schema: PostmarkInbound },
            },
          },
          response: {
            ...(created === 201
              ? { 200: Ok(DuplicateReceipt), 201: Ok(InboundReceipt) }
              : { 200: Ok(Type.Union([InboundReceipt, DuplicateReceipt])) }),
            ...PROVIDER_ERRORS,
            413: errorResponse('PAYLOAD_TOO_LARGE: the e-mail is larger than 10 MiB', 413),
            415: errorResponse('UNSUPPORTED_MEDIA_TYPE: the body is in none of the accepted forms', 415),
          },
        },
      },
      async (request, reply) => {
        const inbound = await inboundOf(request.body, mediaTypeOf(request));
        if (inbound === null) throw validation([{ field: 'body', message: 'has no From address' }]);
        const r = await receiveInbound(mail.ctx.store, inbound, mail.channelDispatcher, mail.inboundFiles);
        reply.code(r.stored ? created : 200);
        return ok(receiptOf(r));
      },
    );
  route('/email/inbound', 'receiveEmail', 'Receive an e-mail from a guest', 201);
  route(
    '/email/inbound/mime',
    'receiveEmailMime',
    'Receive an e-mail from a guest (Mailgun’s MIME address; 200 for a new e-mail too)',
    200,
  );
};

/** The e-mail a body holds, in whichever accepted form it came. */
async function inboundOf(body: unknown, type: string) {
  if (type === 'message/rfc822') return readEmail(body as string);
  if (type === 'application/json') {
    const p = body as PostmarkInbound;
    return p.RawEmail ? readEmail(bytesOf(p.RawEmail)) : readPostmark(p);
  }
  const form = body as Record<string, string>;
  return readEmail((form.email ?? form['body-mime'])!);
}
