// Owns the guest resource's request and response schemas.
import { Type } from 'typebox';
import { Nullable, PageQuery, RecordId } from '../../lib/schemas.js';
import { StaySummary } from '../stays/schemas.js';

export const MAX_TAGS = 50;
export const MAX_ATTRIBUTES = 50;
export const MAX_ATTRIBUTE_TEXT = 500;
/** The shape of an attribute's key, checked by the service so the message names the key. */
export const ATTRIBUTE_KEY = /^[a-z][a-z0-9_]{0,39}$/;

const AttributeValue = Type.Union([
  Type.String({ maxLength: MAX_ATTRIBUTE_TEXT }),
  Type.Number(),
  Type.Boolean(),
  Type.Null(),
]);
const ATTRIBUTE_EXAMPLE = { loyalty_tier: 'gold', pillow: 'firm', visits: 4, vip: true };

const AttributesOut = Type.Object(
  {},
  {
    additionalProperties: Type.Union([Type.String({ maxLength: MAX_ATTRIBUTE_TEXT }), Type.Number(), Type.Boolean()]),
    maxProperties: MAX_ATTRIBUTES,
    description: 'Typed facts about the guest, often from the PMS: string (≤ 500), number or boolean values',
    examples: [ATTRIBUTE_EXAMPLE],
  },
);

/** Attributes a request sets: merged into the guest's; a null value removes its key. */
const AttributesIn = Type.Object(
  {},
  {
    additionalProperties: AttributeValue,
    maxProperties: MAX_ATTRIBUTES,
    description:
      `Up to ${MAX_ATTRIBUTES} keys (lowercase letters, digits and _, starting with a letter, ≤ 40 characters), ` +
      `each a string of at most ${MAX_ATTRIBUTE_TEXT} characters, a number, a boolean, or null to remove the key. ` +
      "Merged into the guest's attributes.",
    examples: [ATTRIBUTE_EXAMPLE],
  },
);

const ExternalRef = Type.String({
  minLength: 1,
  maxLength: 100,
  description: "The PMS's profile id; unique among guests",
  examples: ['PROF-88231'],
});

export const Guest = Type.Object(
  {
    id: RecordId('gst'),
    name: Type.String({ maxLength: 200 }),
    email: Nullable(Type.String({ format: 'email', maxLength: 254 })),
    phone: Nullable(Type.String({ maxLength: 16, description: 'E.164, e.g. +447700900123' })),
    tags: Type.Array(Type.String({ maxLength: 50 }), { maxItems: 50 }),
    notes: Nullable(Type.String({ maxLength: 10_000 })),
    externalRef: Nullable(
      Type.String({ maxLength: 100, description: "The PMS's profile id; unique", examples: ['PROF-88231'] }),
    ),
    attributes: AttributesOut,
    stay: StaySummary,
    createdAt: Type.String({ format: 'date-time', maxLength: 30 }),
    updatedAt: Type.String({ format: 'date-time', maxLength: 30 }),
  },
  { $id: 'Guest' },
);

const Name = Type.String({ minLength: 1, maxLength: 200 });
const Email = Type.String({ format: 'email', maxLength: 254 });
const Phone = Type.String({
  pattern: '^\\+[1-9]\\d{6,14}$',
  'x-pattern-message': 'must be an E.164 number like +14155550123',
  maxLength: 16,
  description: 'E.164: a leading +, country code and number, 7 to 15 digits',
  examples: ['+447700900123'],
});
const Tag = Type.String({ minLength: 1, maxLength: 50 });
const Tags = Type.Array(Tag, {
  maxItems: MAX_TAGS,
  description: `At most ${MAX_TAGS} tags of 1–50 characters; duplicates are dropped, first occurrence kept`,
});
const Notes = Type.String({ maxLength: 10_000 });

// null on create means "none", as it does on update, so a client can send the same shape to both.
export const CreateGuestBody = Type.Object(
  {
    name: Name,
    email: Type.Optional(Nullable(Email)),
    phone: Type.Optional(Nullable(Phone)),
    tags: Type.Optional(Tags),
    notes: Type.Optional(Nullable(Notes)),
    externalRef: Type.Optional(Nullable(ExternalRef)),
    attributes: Type.Optional(AttributesIn),
  },
  {
    additionalProperties: false,
    examples: [
      {
        name: 'Ana Lopes',
        email: 'ana.lopes@example.com',
        phone: '+351912345678',
        tags: ['vip'],
        notes: 'Prefers a quiet room',
        externalRef: 'PROF-10001',
        attributes: { loyalty_tier: 'gold', pillow: 'firm' },
      },
    ],
  },
);

/**
 * PUT /guests/by-ref/:externalRef: the fields given are set, those left out kept (tags and notes
 * are the hotel team's as much as the PMS's), attributes merged as on PATCH.
 */
export const PutGuestBody = Type.Object(
  {
    name: Name,
    email: Type.Optional(Nullable(Email)),
    phone: Type.Optional(Nullable(Phone)),
    tags: Type.Optional(Tags),
    notes: Type.Optional(Nullable(Notes)),
    attributes: Type.Optional(AttributesIn),
  },
  {
    additionalProperties: false,
    examples: [
      {
        name: 'Lena Fischer',
        email: 'lena.fischer@example.de',
        phone: '+4915112345678',
        attributes: { loyalty_tier: 'gold', language: 'de' },
      },
    ],
  },
);

export const GuestRefParams = Type.Object({
  externalRef: Type.String({
    minLength: 1,
    maxLength: 100,
    description: "The PMS's profile id",
    examples: ['PROF-88231'],
  }),
});

export const UpdateGuestBody = Type.Object(
  {
    name: Type.Optional(Name),
    email: Type.Optional(Nullable(Email)),
    phone: Type.Optional(Nullable(Phone)),
    tags: Type.Optional(Tags),
    notes: Type.Optional(Nullable(Notes)),
    externalRef: Type.Optional(Nullable(ExternalRef)),
    attributes: Type.Optional(AttributesIn),
  },
  {
    additionalProperties: false,
    minProperties: 1,
    // Only what changes: an update naming the guest's own e-mail and phone again is no example.
    examples: [{ tags: ['vip', 'returning'], notes: 'Prefers a quiet room away from the lift' }],
  },
);

export const ListGuestsQuery = Type.Object(
  {
    ...PageQuery,
    search: Type.Optional(
      Type.String({
        maxLength: 200,
        description: 'Case-insensitive substring of the name, e-mail or phone; % and _ match literally',
      }),
    ),
    tag: Type.Optional(Type.String({ minLength: 1, maxLength: 50, description: 'Guests carrying exactly this tag' })),
    email: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 254,
        description: 'The guest with exactly this e-mail address, compared case-insensitively',
        examples: ['lena.fischer@example.de'],
      }),
    ),
    phone: Type.Optional(
      Type.String({ minLength: 1, maxLength: 16, description: 'The guest with exactly this phone number (E.164)' }),
    ),
    externalRef: Type.Optional(
      Type.String({ minLength: 1, maxLength: 100, description: 'The guest with exactly this externalRef' }),
    ),
  },
  { additionalProperties: false },
);
