// Owns the webhook resource's request and response schemas, and those of its deliveries.
import { type Static, Type } from 'typebox';
import { Nullable, PageQuery, RecordId, RefId } from '../../lib/schemas.js';
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

const Url = Type.String({
  minLength: 1,
  maxLength: 2048,
  // What the server's URL check (url-guard.ts) needs of the form: an http or https scheme (any
  // case), "://", then a host with no user name or password before it.
  pattern: '^[Hh][Tt][Tt][Pp][Ss]?://[^/?#@\\s\\\\]+([/?#\\\\].*)?$',
  'x-pattern-message': 'must be an absolute http or https URL, without a user name or password',
  examples: ['https://hooks.example.com/guest-messaging'],
  description:
    'http(s) URL of the receiver. Hosts resolving to loopback, private, link-local, unspecified, reserved or ' +
    'multicast addresses (also through NAT64, 6to4 or Teredo) are refused unless WEBHOOK_ALLOW_PRIVATE=true',
});
const Events = Type.Array(Type.Enum([...SUBSCRIBABLE]), {
  minItems: 1,
  maxItems: SUBSCRIBABLE.length,
  uniqueItems: true,
  description: 'Event types to receive, or ["*"] for all',
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
  { $id: 'WebhookDelivery' },
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
