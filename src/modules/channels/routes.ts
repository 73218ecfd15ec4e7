// Owns /channels: where providers and the web widget's backend hand the API what guests wrote and
// what became of the texts sent to them. Provider routes are outside the staff token scheme:
// each proves its caller by the provider's own signature (Twilio, Meta) or a shared secret
// (inbound e-mail: email-route.ts) before anything is read or stored, takes only what is
// addressed to our own numbers, and all count in the `channels` rate-limit bucket. The web route
// (web-route.ts) takes an admin or manager token or a key, and its ids are its caller's.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import sjson from 'secure-json-parse';
import { type Static, Type } from 'typebox';
import { AppError, forbidden, validation } from '../../lib/errors.js';
import { BODY_ERRORS, Ok, ok } from '../../lib/schemas.js';
import { inputProblem } from '../../lib/validation.js';
import { fillFiles } from '../attachments/service.js';
import { emailInboundRoute } from './email-route.js';
import { contentOf, receiveInbound } from './inbound.js';
import { readMetaWebhook, twilioMedia, twilioStatus } from './payloads.js';
import {
  PROVIDER,
  PROVIDER_ERRORS,
  TwilioInboundForm,
  TwilioStatusForm,
  WhatsAppReceipt,
  WhatsAppVerifyQuery,
  WhatsAppWebhookBody,
} from './schemas.js';
import { type FormParams, metaSignatureValid, parseForm, same, twilioSignatureValid } from './signatures.js';
import { receiveStatus } from './statuses.js';
import { webInboundRoute } from './web-route.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The body as received, for routes that check a signature over it. */
    channelRaw: Buffer | null;
    /** A form body with every value of every name (Twilio signs them all). */
    channelForm: FormParams | null;
  }
}

const EMPTY_TWIML = '<?xml version="1.0" encoding="UTF-8"?><Response></Response>';

/** Whether Twilio's address (`To` of a guest's message, `From` of a status) is one of our senders. */
function ourTwilioNumber(
  t: { smsFrom: string | null; whatsappFrom: string | null },
  address: string,
  channel?: string,
) {
  const a = address.trim().toLowerCase();
  const sms = t.smsFrom !== null && a === t.smsFrom;
  const wa = t.whatsappFrom !== null && a === `whatsapp:${t.whatsappFrom}`;
  return channel === 'sms' ? sms : channel === 'whatsapp' ? wa : sms || wa;
}

export const channelsRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const store = () => app.ctx.store;
  const fill = fillFiles(app.attachments.signer);
  const cfg = () => app.ctx.config.channels;
  app.decorateRequest('channelRaw', null);
  app.decorateRequest('channelForm', null);

  // Form bodies (Twilio): every value kept for the signature; the first of each name validated.
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (request, body, done) => {
    const form = parseForm(body as string);
    request.channelForm = form;
    done(null, Object.fromEntries([...form].map(([k, v]) => [k, v[0]])));
  });

  /** Twilio's signature over PUBLIC_URL + the path it called + the form; 403 unless it matches. */
  const twilioSigned = async (request: FastifyRequest) => {
    const { twilio, publicUrl } = cfg();
    if (twilio === null || publicUrl === null) throw forbidden('Twilio is not configured on this server');
    const url = new URL(publicUrl);
    const signed = `${url.origin}${url.pathname.replace(/\/$/, '')}${request.url}`;
    const header = request.headers['x-twilio-signature'];
    if (
      !twilioSignatureValid(twilio.authToken, signed, request.channelForm ?? new Map(), header as string | undefined)
    ) {
      throw forbidden('The X-Twilio-Signature header is missing or does not match');
    }
  };

  app.post(
    '/twilio/inbound',
    {
      config: PROVIDER,
      preValidation: twilioSigned,
      schema: {
        tags: ['channels'],
        operationId: 'receiveTwilioMessage',
        summary: 'Receive an SMS or WhatsApp message from Twilio',
        description:
          "Twilio's incoming-message webhook (form-encoded), signed with `X-Twilio-Signature` against " +
          '`PUBLIC_URL`. The sender becomes or matches a guest and the message joins their conversation on the ' +
          'channel (`whatsapp:` senders: WhatsApp, else SMS). A message Twilio repeats is stored once. A message ' +
          'whose `To` is not our number for its channel (`TWILIO_SMS_FROM`, `whatsapp:` + `TWILIO_WHATSAPP_FROM`) ' +
          'is acknowledged and ignored. Answers an empty TwiML document, so Twilio sends nothing back by itself.',
        security: [{ twilioSignature: [] }],
        body: { content: { 'application/x-www-form-urlencoded': { schema: TwilioInboundForm } } },
        response: {
          200: {
            description: 'Stored (or already stored): an empty TwiML response',
            content: { 'text/xml': { schema: Type.String({ maxLength: 100 }), example: EMPTY_TWIML } },
          },
          ...PROVIDER_ERRORS,
          ...BODY_ERRORS,
        },
      },
    },
    async (request, reply) => {
      const f = request.body as {
        MessageSid: string;
        From: string;
        To?: string;
        Body?: string;
        NumMedia?: string;
        ProfileName?: string;
      };
      const whatsapp = f.From.toLowerCase().startsWith('whatsapp:');
      // Signed by our account, but a sister hotel's number on it is not ours to answer.
      if (!ourTwilioNumber(cfg().twilio!, f.To ?? '', whatsapp ? 'whatsapp' : 'sms')) {
        request.log.info({ to: f.To ?? null }, 'twilio message for another number ignored');
        return reply.type('text/xml; charset=utf-8').send(EMPTY_TWIML);
      }
      const media = Number(f.NumMedia ?? 0);
      const note = media > 0 ? `\n[${media} attachment${media === 1 ? '' : 's'}]` : '';
      await receiveInbound(
        store(),
        {
          channel: whatsapp ? 'whatsapp' : 'sms',
          sender: { phone: whatsapp ? f.From.slice('whatsapp:'.length) : f.From, name: f.ProfileName ?? null },
          content: contentOf(`${(f.Body ?? '').trim()}${note}`, '[empty message]'),
          providerId: f.MessageSid,
          files: twilioMedia(request.body as Record<string, unknown>),
        },
        app.channelDispatcher,
        app.inboundFiles,
      );
      return reply.type('text/xml; charset=utf-8').send(EMPTY_TWIML);
    },
  );

  app.post(
    '/twilio/status',
    {
      config: PROVIDER,
      preValidation: twilioSigned,
      schema: {
        tags: ['channels'],
        operationId: 'receiveTwilioStatus',
        summary: 'Receive a delivery status from Twilio',
        description:
          "Twilio's status callback for a text the API sent (the StatusCallback it was given), signed with " +
          '`X-Twilio-Signature`. sent, delivered and read move the message forward (never back); failed and ' +
          'undelivered mark it failed with the error Twilio names; none moves a queued message. A status for a ' +
          'sid no message carries yet (it outran the recording of the send) is kept for a day and applied once ' +
          'a message is sent with that sid. Statuses from a number that is not ours, and the steps before sent, ' +
          'are accepted and ignored.',
        security: [{ twilioSignature: [] }],
        body: { content: { 'application/x-www-form-urlencoded': { schema: TwilioStatusForm } } },
        response: {
          204: Type.Null({ description: 'Accepted' }),
          ...PROVIDER_ERRORS,
          ...BODY_ERRORS,
        },
      },
    },
    async (request, reply) => {
      const f = request.body as TwilioStatusForm;
      if (f.From !== undefined && !ourTwilioNumber(cfg().twilio!, f.From)) return reply.code(204).send(null);
      const change = twilioStatus(f);
      if (change !== null) await receiveStatus(store(), f.MessageSid, change, fill);
      return reply.code(204).send(null);
    },
  );

  await app.register(async (wa) => {
    // Meta signs the exact bytes it sent: the body is kept raw, and parsed after the signature.
    wa.removeContentTypeParser('application/json');
    wa.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
      request.channelRaw = body as Buffer;
      done(null, undefined);
    });

    wa.get(
      '/whatsapp/webhook',
      {
        config: PROVIDER,
        schema: {
          tags: ['channels'],
          operationId: 'verifyWhatsAppWebhook',
          summary: "Answer Meta's webhook verification",
          description:
            'Meta calls this once when the webhook is set up in the app dashboard: the answer is `hub.challenge` ' +
            'when `hub.verify_token` equals `WHATSAPP_VERIFY_TOKEN`, else 403.',
          security: [],
          querystring: WhatsAppVerifyQuery,
          response: {
            200: {
              description: 'The challenge, as sent',
              content: { 'text/plain': { schema: Type.String({ maxLength: 512 }), example: '1158201444' } },
            },
            ...PROVIDER_ERRORS,
          },
        },
      },
      async (request, reply) => {
        const expected = cfg().whatsappVerifyToken;
        const q = request.query as Static<typeof WhatsAppVerifyQuery>;
        if (expected === null) throw forbidden('WHATSAPP_VERIFY_TOKEN is not configured on this server');
        if (q['hub.mode'] !== 'subscribe' || !same(q['hub.verify_token'] ?? '', expected) || !q['hub.challenge']) {
          throw forbidden('hub.mode must be subscribe and hub.verify_token must match WHATSAPP_VERIFY_TOKEN');
        }
        return reply.type('text/plain; charset=utf-8').send(q['hub.challenge']);
      },
    );

    wa.post(
      '/whatsapp/webhook',
      {
        config: PROVIDER,
        preValidation: async (request) => {
          const secret = cfg().whatsappAppSecret;
          if (secret === null) throw forbidden('WHATSAPP_APP_SECRET is not configured on this server');
          const raw = request.channelRaw ?? Buffer.alloc(0);
          const header = request.headers['x-hub-signature-256'];
          if (!metaSignatureValid(secret, raw, header as string | undefined)) {
            throw forbidden('The X-Hub-Signature-256 header is missing or does not match');
          }
          try {
            request.body = sjson.parse(raw.toString('utf8'), null, {
              protoAction: 'remove',
              constructorAction: 'remove',
            });
          } catch {
            throw validation([{ field: 'body', message: 'is not valid JSON' }], 'The body is not valid JSON');
          }
          // The checks every other body gets before validation (NUL, nesting depth), now it is parsed.
          const problem = inputProblem(request.body, 'body');
          if (problem !== null) throw validation([problem], `${problem.field}: ${problem.message}`);
        },
        schema: {
          tags: ['channels'],
          operationId: 'receiveWhatsAppWebhook',
          summary: 'Receive guest messages and delivery statuses from WhatsApp Cloud',
          description:
            "Meta's webhook, signed with `X-Hub-Signature-256` (HMAC-SHA256 of the raw body with " +
            '`WHATSAPP_APP_SECRET`). Each `messages[]` item is stored once in the sender’s WhatsApp conversation; ' +
            'each `statuses[]` item moves the text it names forward (one naming an id no text carries yet is ' +
            'kept for a day, applied once a text is sent with it, and counted as skipped). Entries it does not ' +
            'understand, and every item of a change for another `phone_number_id` than `WHATSAPP_PHONE_NUMBER_ID`, ' +
            'are counted as skipped, and the answer is still 200, so Meta does not retry them.',
          security: [{ whatsappSignature: [] }],
          body: WhatsAppWebhookBody,
          response: { 200: Ok(WhatsAppReceipt), ...PROVIDER_ERRORS, ...BODY_ERRORS },
        },
      },
      async (request) => {
        const hook = readMetaWebhook(request.body as { entry: unknown[] }, cfg().whatsapp?.phoneNumberId ?? null);
        if (hook.foreign > 0) request.log.info({ items: hook.foreign }, 'whatsapp items for another number ignored');
        const receipt = { messages: 0, duplicates: 0, statuses: 0, skipped: hook.skipped };
        for (const m of hook.messages) {
          try {
            const r = await receiveInbound(store(), m, app.channelDispatcher, app.inboundFiles);
            if (r.stored) receipt.messages++;
            else receipt.duplicates++;
          } catch (err) {
            if (!(err instanceof AppError) || err.code !== 'VALIDATION_ERROR') throw err;
            receipt.skipped++;
          }
        }
        for (const s of hook.statuses) {
          if (await receiveStatus(store(), s.id, s.change, fill)) receipt.statuses++;
          else receipt.skipped++;
        }
        return ok(receipt);
      },
    );
  });

  await app.register(emailInboundRoute);
  await app.register(webInboundRoute);
};
