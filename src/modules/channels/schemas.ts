// Owns the request and response schemas of the channel routes: what Twilio, Meta and the web
// widget's backend send (inbound e-mail relays: email-schemas.ts), what they get back, and the
// route options every provider route shares.
import { type Static, Type } from 'typebox';
import { EXAMPLE_TIME } from '../../lib/openapi-examples.js';
import { errorResponse, exampleId, Nullable, RefId, RefIdInput, STANDARD_ERRORS } from '../../lib/schemas.js';
import { AttachmentIds } from '../attachments/schemas.js';
import { Message } from '../conversations/schemas.js';
import type { InboundResult } from './inbound.js';

/** A provider's route: outside the token scheme (it proves its caller itself), in its own bucket. */
export const PROVIDER = { access: 'public', bucket: 'channels' } as const;

/** The errors a provider route can answer: no token is involved, so no 401. */
export const PROVIDER_ERRORS = {
  400: STANDARD_ERRORS[400],
  403: errorResponse('FORBIDDEN: the signature or secret is missing or wrong, or the provider is not configured', 403),
  429: STANDARD_ERRORS[429],
  500: STANDARD_ERRORS[500],
  503: STANDARD_ERRORS[503],
};

const Text = (maxLength: number, description?: string) =>
  Type.String({ maxLength, ...(description ? { description } : {}) });

/**
 * The examples' numbers: the guest's, and the hotel's own (TWILIO_SMS_FROM; WhatsApp Cloud's
 * phone number id, WHATSAPP_PHONE_NUMBER_ID), as a provider would send them.
 */
const GUEST_PHONE = '+351912345678';
export const EXAMPLE_HOTEL_NUMBER = '+14155550100';
export const EXAMPLE_PHONE_NUMBER_ID = '106540352242922';
const TWILIO_SID = 'SM3f9c2a7e5b1d4c8a9e0f6b2d7c1a5e9f';
const HELLO = 'Hello! Could we have two extra towels, please?';

/** Twilio's form parameters the API reads; Twilio sends more, which are signed and ignored. */
export const TwilioInboundForm = Type.Object(
  {
    MessageSid: Text(64, "Twilio's id of the message"),
    From: Text(64, 'The sender: +E.164 for SMS, whatsapp:+E.164 for WhatsApp'),
    To: Type.Optional(Text(64)),
    Body: Type.Optional(Text(16_000)),
    NumMedia: Type.Optional(Text(4)),
    ProfileName: Type.Optional(Text(256, 'WhatsApp: the name on the sender’s profile')),
  },
  {
    additionalProperties: true,
    examples: [{ MessageSid: TWILIO_SID, From: GUEST_PHONE, To: EXAMPLE_HOTEL_NUMBER, Body: HELLO, NumMedia: '0' }],
  },
);

export const TwilioStatusForm = Type.Object(
  {
    MessageSid: Text(64),
    MessageStatus: Text(32, 'queued, sending, sent, delivered, read, undelivered or failed'),
    From: Type.Optional(Text(64, 'Our number the text was sent from: a status from another is ignored')),
    ErrorCode: Type.Optional(Text(16)),
    ErrorMessage: Type.Optional(Text(1000)),
  },
  {
    additionalProperties: true,
    examples: [{ MessageSid: TWILIO_SID, MessageStatus: 'delivered', From: EXAMPLE_HOTEL_NUMBER }],
  },
);
export type TwilioStatusForm = Static<typeof TwilioStatusForm>;

export const WhatsAppVerifyQuery = Type.Object({
  'hub.mode': Type.Optional(Type.String({ maxLength: 32, description: 'subscribe', examples: ['subscribe'] })),
  'hub.verify_token': Type.Optional(
    Type.String({ maxLength: 512, description: 'WHATSAPP_VERIFY_TOKEN', examples: ['your-verify-token'] }),
  ),
  'hub.challenge': Type.Optional(
    Type.String({ maxLength: 512, description: 'Answered back as the body', examples: ['1158201444'] }),
  ),
});

/** Meta's webhook envelope; the entries are read field by field (unknown parts are skipped). */
export const WhatsAppWebhookBody = Type.Object(
  {
    object: Text(64, 'whatsapp_business_account'),
    entry: Type.Array(Type.Object({}, { additionalProperties: true }), { maxItems: 1000 }),
  },
  {
    additionalProperties: true,
    // A guest's text, as WhatsApp Cloud sends it to the number WHATSAPP_PHONE_NUMBER_ID names.
    examples: [
      {
        object: 'whatsapp_business_account',
        entry: [
          {
            id: '102290129340398',
            changes: [
              {
                field: 'messages',
                value: {
                  messaging_product: 'whatsapp',
                  metadata: {
                    display_phone_number: EXAMPLE_HOTEL_NUMBER.slice(1),
                    phone_number_id: EXAMPLE_PHONE_NUMBER_ID,
                  },
                  contacts: [{ profile: { name: 'Ana Lopes' }, wa_id: GUEST_PHONE.slice(1) }],
                  messages: [
                    {
                      from: GUEST_PHONE.slice(1),
                      id: 'wamid.HBgMMzUxOTEyMzQ1Njc4FQIAEhggQjVGRjE5NkQ3',
                      timestamp: '1795329192',
                      type: 'text',
                      text: { body: HELLO },
                    },
                  ],
                },
              },
            ],
          },
        ],
      },
    ],
  },
);

const Phone = Type.String({
  pattern: '^\\+[1-9]\\d{6,14}$',
  'x-pattern-message': 'must be an E.164 number like +14155550123',
  maxLength: 16,
  description: 'E.164',
});

/** A field present as a string (not null): what a guest is known by. */
const known = (field: string, maxLength: number) => ({
  required: [field],
  properties: { [field]: { type: 'string', maxLength } },
});

export const WebInboundBody = Type.Object(
  {
    guestId: Type.Optional(RefIdInput('gst', 'A known guest')),
    guest: Type.Optional(
      Type.Object(
        {
          name: Type.Optional(
            Type.String({
              minLength: 1,
              maxLength: 200,
              description: 'The name a new guest gets (default: the e-mail, the phone, else "Web visitor")',
            }),
          ),
          email: Type.Optional(Nullable(Type.String({ format: 'email', maxLength: 254 }))),
          phone: Type.Optional(Nullable(Phone)),
          visitorId: Type.Optional(
            Type.String({
              minLength: 1,
              maxLength: 100,
              description:
                "The widget's own id of an anonymous visitor: the same caller naming it again reaches the same guest",
            }),
          ),
        },
        {
          additionalProperties: false,
          anyOf: [known('email', 254), known('phone', 16), known('visitorId', 100)],
          'x-rule-message': 'needs an email, a phone or a visitorId, to know the guest again',
          description:
            'The visitor: the guest its visitorId already is (for this caller), else the guest with its phone or ' +
            'e-mail, else a new guest. Needs at least one of email, phone and visitorId.',
        },
      ),
    ),
    content: Type.Optional(
      Type.String({ minLength: 1, maxLength: 4096, description: 'What the visitor wrote; optional with attachments' }),
    ),
    attachments: Type.Optional(AttachmentIds),
    externalId: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 255,
        description: "The widget's id of the message: the same id is stored once however often it is sent",
      }),
    ),
  },
  {
    additionalProperties: false,
    oneOf: [{ required: ['guestId'] }, { required: ['guest'] }],
    'x-rule-message': 'give exactly one of guestId and guest',
    'x-rule-field': 'guestId',
    description: 'Exactly one of guestId and guest.',
    examples: [
      {
        guest: { visitorId: 'visitor-5f2b1c', name: 'Ana Lopes' },
        content: 'Hello! Is the spa open this evening?',
        externalId: 'chat-81723',
      },
    ],
  },
);
export type WebInboundBody = Static<typeof WebInboundBody>;

export const InboundReceipt = Type.Object(
  {
    message: Message,
    conversationId: RefId('cnv'),
    guestId: RefId('gst'),
    guestCreated: Type.Boolean({ description: 'The sender was unknown and became a new guest' }),
    conversationCreated: Type.Boolean({ description: 'The message started a new conversation' }),
    duplicate: Type.Literal(false, { description: 'Always false here: this call stored the message' }),
    // The same shape as Message, inline: a schema may hold one copy of an $id.
    autoReply: Nullable(
      Type.Object(Message.properties, { description: 'The auto reply this message caused (outside business hours)' }),
    ),
  },
  {
    // A guest's first web message: a new conversation with a guest matched by e-mail.
    examples: [
      {
        message: {
          id: exampleId('msg'),
          conversationId: exampleId('cnv'),
          direction: 'inbound',
          type: 'text',
          content: HELLO,
          sender: { type: 'guest', id: exampleId('gst') },
          deliveryStatus: 'received',
          externalId: 'widget-msg-7f3a9c',
          error: null,
          sentAt: null,
          deliveredAt: null,
          readAt: null,
          attachments: [],
          createdAt: EXAMPLE_TIME,
        },
        conversationId: exampleId('cnv'),
        guestId: exampleId('gst'),
        guestCreated: false,
        conversationCreated: true,
        duplicate: false,
        autoReply: null,
      },
    ],
  },
);

/** A repeat of a message already stored: its id and nothing else (not its content, nor its guest). */
export const DuplicateReceipt = Type.Object({
  duplicate: Type.Literal(true, { description: 'The message was already stored: nothing changed' }),
  message: Type.Object({ id: RefId('msg') }, { description: 'The message stored by the first delivery' }),
});

export const WhatsAppReceipt = Type.Object({
  messages: Type.Integer({ format: 'int32', minimum: 0, maximum: 1_000_000, description: 'Guest messages stored' }),
  duplicates: Type.Integer({
    format: 'int32',
    minimum: 0,
    maximum: 1_000_000,
    description: 'Guest messages already stored',
  }),
  statuses: Type.Integer({ format: 'int32', minimum: 0, maximum: 1_000_000, description: 'Delivery statuses applied' }),
  skipped: Type.Integer({
    format: 'int32',
    minimum: 0,
    maximum: 1_000_000,
    description:
      'Entries not understood, statuses of messages this API did not send, and items for another phone number',
  }),
});

/** The answer of a route that stores one message; a repeat gets its id and nothing else. */
export function receiptOf(r: InboundResult) {
  if (!r.stored) return { duplicate: true as const, message: { id: r.messageId } };
  return {
    message: r.message,
    conversationId: r.message.conversationId,
    guestId: r.guestId,
    guestCreated: r.guestCreated,
    conversationCreated: r.conversationCreated,
    duplicate: false as const,
    autoReply: r.autoReply,
  };
}

/** Where a stored inbound message is read: its GET in its conversation (the 201's Location). */
export function messageLocation(data: Record<string, unknown>): string | null {
  const message = data.message as { id?: unknown } | undefined;
  const conversation = data.conversationId;
  return typeof message?.id === 'string' && typeof conversation === 'string'
    ? `/api/v1/conversations/${conversation}/messages/${message.id}`
    : null;
}
