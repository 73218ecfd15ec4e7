// Owns the webhook resource's request and response schemas, and those of its deliveries.
import { type Static, Type } from 'typebox';
import { EXAMPLE_FUTURE, EXAMPLE_TIME } from '../../lib/openapi-examples.js';
import { documentedRule } from '../../lib/openapi-rules.js';
import { exampleId, Nullable, PageQuery, RecordId, RefId } from '../../lib/schemas.js';
import { EVENT_TYPES } from '../events/schemas.js';

/** What an endpoint may subscribe to: any event type but the test ping (sent on request), or "*". */
export const SUBSCRIBABLE = ['*', ...EVENT_TYPES.filter((t) => t !== 'webhook.test')] as const;

const DateTime = Type.String({ format: 'date-time', maxLength: 30 });
const Id = Type.String({ maxLength: 64 });

export const Webhook = Type.Object(
  {
    id: RecordId('whk'),
    url: Type.String({ maxLength: 2048 }),
    events: Type.Array(Type.Enum([...SUBSCRIBABLE]), { maxItems: SUBSCRIBABLE.length }),
    description: Nullable(Type.String({ maxLength: 500 })),
    active: Type.Boolean({ description: 'Inactive endpoints get no new deliveries and their pending ones wait' }),
    consecutiveFailures: Type.Integer({
      format: 'int32',
      minimum: 0,
      maximum: 2_147_483_647,
      description: 'Failed attempts since the last success; at WEBHOOK_DISABLE_AFTER the endpoint is deactivated',
    }),
    apiKeyId: Nullable(
      RefId(
        'key',
        'The API key that created or last changed it: revoking that key (or its expiry) turns the endpoint off. ' +
          'Null: made by staff, or taken over by an admin turning it on',
      ),
    ),
    createdAt: DateTime,
    updatedAt: DateTime,
  },
  { $id: 'Webhook' },
);
export type WebhookView = Static<typeof Webhook>;

export const WebhookWithSecret = Type.Object(
  {
    ...Webhook.properties,
    secret: Type.String({
      maxLength: 100,
      description:
        'Signing secret, shown only in this response: Webhook-Signature is v1=hex(HMAC-SHA256(secret, "<Webhook-Timestamp>.<body>"))',
    }),
  },
  { $id: 'WebhookWithSecret' },
);

/**
 * The form of a URL the server's check (url-guard.ts, the WHATWG URL parser) accepts, so a URL the
 * document admits is one the server takes: an http or https scheme (any case) and "://"; a host
 * without a user name or password, in ASCII (a WHATWG host refuses controls, space and % < > [ ]
 * ^ |, and reads a name whose last label is a number, like 123 or 0x1f, as an IPv4 address); an
 * optional port up to 65535; then anything but control characters. Written without lookaround,
 * so a fuzzer can build strings from it.
 */
const OCTET = '(25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])';
/** Characters of a host name's label: L any, N not a digit, N2 neither a digit nor x, G not hex. */
const chars = (set: string) => `[${set}!$&'()*+,;=_~"{}\`-]`;
const L = chars('A-Za-z0-9');
const N = chars('A-Za-z');
const N2 = chars('A-WYZa-wyz');
const G = chars('G-Zg-z');
/** A label that is not a number: one with a non-digit, other than 0x and hex digits. */
const WORD = `(([1-9][0-9]*)?${N}|0[0-9]+${N}|0${N2}|0[xX][0-9A-Fa-f]*${G})${L}*`;
const HOST = ['\\[[0-9A-Fa-f:.]+\\]', `(${OCTET}\\.){3}${OCTET}`, `(${L}*\\.)*${WORD}\\.?`].join('|');
const PORT = '(:(6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5]?[0-9]{0,4}))?';
export const URL_PATTERN = `^[Hh][Tt][Tt][Pp][Ss]?://(${HOST})${PORT}([/?#\\\\][^\\x00-\\x1f\\x7f]*)?$`;

const Url = Type.String({
  minLength: 1,
  maxLength: 2048,
  pattern: URL_PATTERN,
  'x-pattern-message':
    'must be an absolute http or https URL with an ASCII host, without a user name, password or control characters',
  examples: ['https://hooks.example.com/guest-messaging'],
  description:
    'http(s) URL of the receiver: an ASCII host (an internationalised name in its xn-- form, valid Punycode), ' +
    'IPv4 or [IPv6] address, an optional port, no user name or password, no control characters. Hosts ' +
    'resolving to loopback, private, link-local, unspecified, reserved or multicast addresses (also through ' +
    'NAT64, 6to4 or Teredo) are refused unless WEBHOOK_ALLOW_PRIVATE=true',
});
const Events = Type.Array(Type.Enum([...SUBSCRIBABLE]), {
  minItems: 1,
  maxItems: SUBSCRIBABLE.length,
  uniqueItems: true,
  description: 'Event types to receive, or ["*"] for all (a list naming "*" names nothing else)',
  ...documentedRule(null, { contains: { const: '*' } }, { maxItems: 1 }),
});
const Description = Type.String({ maxLength: 500 });

export const CreateWebhookBody = Type.Object(
  {
    url: Url,
    events: Events,
    description: Type.Optional(Nullable(Description)),
    active: Type.Optional(Type.Boolean({ default: true })),
  },
  { additionalProperties: false },
);
export type CreateWebhookInput = Static<typeof CreateWebhookBody>;

export const UpdateWebhookBody = Type.Object(
  {
    url: Type.Optional(Url),
    events: Type.Optional(Events),
    description: Type.Optional(Nullable(Description)),
    active: Type.Optional(
      Type.Boolean({ description: 'true re-activates a disabled endpoint and resets its failure count' }),
    ),
  },
  { additionalProperties: false, minProperties: 1 },
);
export type UpdateWebhookInput = Static<typeof UpdateWebhookBody>;

export const ListWebhooksQuery = Type.Object(PageQuery, { additionalProperties: false });

export const DELIVERY_STATUSES = ['pending', 'succeeded', 'failed'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

export const Delivery = Type.Object(
  {
    id: RefId('whd', 'Also the Webhook-Id header, the same on every attempt'),
    webhookId: RefId('whk'),
    eventId: Type.String({ maxLength: 15 }),
    eventType: Type.Enum([...EVENT_TYPES]),
    status: Type.Enum([...DELIVERY_STATUSES]),
    attempts: Type.Integer({ format: 'int32', minimum: 0, maximum: 2_147_483_647 }),
    lastResponseCode: Nullable(Type.Integer({ format: 'int32', minimum: 100, maximum: 999 })),
    lastError: Nullable(Type.String({ maxLength: 500 })),
    durationMs: Nullable(Type.Integer({ format: 'int32', minimum: 0, maximum: 2_147_483_647 })),
    nextAttemptAt: Nullable(Type.String({ ...DateTime, description: 'When a pending delivery is tried next' })),
    lastAttemptAt: Nullable(DateTime),
    createdAt: DateTime,
    updatedAt: DateTime,
  },
  {
    $id: 'WebhookDelivery',
    // The first attempt failed; the next one is scheduled.
    examples: [
      {
        id: exampleId('whd'),
        webhookId: exampleId('whk'),
        eventId: '1842',
        eventType: 'task.created',
        status: 'pending',
        attempts: 1,
        lastResponseCode: 503,
        lastError: 'HTTP 503',
        durationMs: 212,
        nextAttemptAt: EXAMPLE_FUTURE,
        lastAttemptAt: EXAMPLE_TIME,
        createdAt: EXAMPLE_TIME,
        updatedAt: EXAMPLE_TIME,
      },
    ],
  },
);
export type DeliveryView = Static<typeof Delivery>;

export const ListDeliveriesQuery = Type.Object(
  { ...PageQuery, status: Type.Optional(Type.Enum([...DELIVERY_STATUSES])) },
  { additionalProperties: false },
);

export const DeliveryParams = Type.Object({
  id: Type.String({ minLength: 1, maxLength: 64 }),
  deliveryId: Type.String({ minLength: 1, maxLength: 64 }),
});

export const DeletedWebhook = Type.Object({ id: Id, deleted: Type.Literal(true) });
