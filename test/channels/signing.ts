// Signed provider requests as Twilio and Meta make them, written from the providers' documentation
// (not from the API's own code, so a wrong algorithm there fails here), with the tests' own secrets.
import { createHmac } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { call, type Res } from '../helpers.js';

export const PUBLIC_URL = 'https://hotel.example.test';
export const TWILIO_TOKEN = 'twilio-test-auth-token';
export const META_SECRET = 'meta-test-app-secret';
export const VERIFY_TOKEN = 'meta-test-verify-token';
export const EMAIL_SECRET = 'email-test-inbound-secret';
/** Our numbers: Meta's id of the WhatsApp number, Twilio's SMS and WhatsApp senders. */
export const META_PHONE_NUMBER_ID = '106540352242922';
export const TWILIO_SMS_NUMBER = '+15550000001';
export const TWILIO_WHATSAPP_NUMBER = '+15550000002';

/** What an app needs to accept signed provider requests (Twilio, Meta, inbound e-mail). */
export const INBOUND_ENV: Record<string, string> = {
  PUBLIC_URL,
  TWILIO_ACCOUNT_SID: 'AC00000000000000000000000000000000',
  TWILIO_AUTH_TOKEN: TWILIO_TOKEN,
  TWILIO_SMS_FROM: TWILIO_SMS_NUMBER,
  TWILIO_WHATSAPP_FROM: TWILIO_WHATSAPP_NUMBER,
  WHATSAPP_ACCESS_TOKEN: 'meta-test-access-token',
  WHATSAPP_PHONE_NUMBER_ID: META_PHONE_NUMBER_ID,
  WHATSAPP_APP_SECRET: META_SECRET,
  WHATSAPP_VERIFY_TOKEN: VERIFY_TOKEN,
  EMAIL_INBOUND_SECRET: EMAIL_SECRET,
};

/**
 * Twilio: base64 HMAC-SHA1 with the auth token over the full URL, then every POST parameter's
 * name immediately followed by its value, the names in alphabetical order.
 */
export function twilioSign(url: string, params: Record<string, string>, token = TWILIO_TOKEN): string {
  const names = Object.keys(params).sort();
  const data = url + names.map((n) => n + params[n]).join('');
  return createHmac('sha1', token).update(Buffer.from(data, 'utf-8')).digest('base64');
}

/** POSTs a form to a Twilio route, signed (or with `signature` instead when given). */
export function postTwilio(
  app: FastifyInstance,
  path: 'inbound' | 'status',
  params: Record<string, string>,
  signature?: string,
): Promise<Res> {
  const url = `/api/v1/channels/twilio/${path}`;
  return call(app, 'POST', url, {
    body: new URLSearchParams(params).toString(),
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      'x-twilio-signature': signature ?? twilioSign(PUBLIC_URL + url, params),
    },
  });
}

/** Meta: `sha256=` + hex HMAC-SHA256 of the exact body bytes with the app secret. */
export function metaSign(body: string, secret = META_SECRET): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

export function postMeta(app: FastifyInstance, payload: unknown, signature?: string): Promise<Res> {
  const body = JSON.stringify(payload);
  return call(app, 'POST', '/api/v1/channels/whatsapp/webhook', {
    body,
    headers: { 'content-type': 'application/json', 'x-hub-signature-256': signature ?? metaSign(body) },
  });
}

/** A WhatsApp Cloud webhook payload holding these messages and statuses, for one of our numbers by default. */
export function metaPayload(
  value: { messages?: unknown[]; statuses?: unknown[]; contacts?: unknown[] },
  phoneNumberId = META_PHONE_NUMBER_ID,
) {
  return {
    object: 'whatsapp_business_account',
    entry: [
      {
        id: '102290129340398',
        changes: [
          {
            field: 'messages',
            value: {
              messaging_product: 'whatsapp',
              metadata: { display_phone_number: '15550000002', phone_number_id: phoneNumberId },
              ...value,
            },
          },
        ],
      },
    ],
  };
}

export function postEmail(app: FastifyInstance, raw: string, password = EMAIL_SECRET): Promise<Res> {
  return call(app, 'POST', '/api/v1/channels/email/inbound', {
    body: raw,
    headers: {
      'content-type': 'message/rfc822',
      authorization: `Basic ${Buffer.from(`relay:${password}`).toString('base64')}`,
    },
  });
}

/** A plain-text RFC 822 message (`headers` are added as given; no `messageId`: none). */
export function email(o: {
  from: string;
  subject?: string;
  messageId?: string;
  inReplyTo?: string;
  references?: string;
  headers?: string[];
  contentType?: string;
  text: string;
}): string {
  return [
    ...(o.headers ?? []),
    `From: ${o.from}`,
    'To: Front Desk <desk@hotel.example.test>',
    `Subject: ${o.subject ?? 'Hello'}`,
    ...(o.messageId ? [`Message-ID: ${o.messageId}`] : []),
    ...(o.inReplyTo ? [`In-Reply-To: ${o.inReplyTo}`] : []),
    ...(o.references ? [`References: ${o.references}`] : []),
    'Date: Wed, 25 Nov 2026 09:00:00 +0000',
    'MIME-Version: 1.0',
    `Content-Type: ${o.contentType ?? 'text/plain; charset=utf-8'}`,
    '',
    o.text,
    '',
  ].join('\r\n');
}
