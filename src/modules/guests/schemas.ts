// Owns the guest resource's request and response schemas.
import { Type } from 'typebox';
import { Nullable, PageQuery, RecordId } from '../../lib/schemas.js';

export const MAX_TAGS = 50;

export const Guest = Type.Object(
  {
    id: RecordId('gst'),
    name: Type.String({ maxLength: 200 }),
    email: Nullable(Type.String({ format: 'email', maxLength: 254 })),
    phone: Nullable(Type.String({ maxLength: 16, description: 'E.164, e.g. +447700900123' })),
    tags: Type.Array(Type.String({ maxLength: 50 }), { maxItems: 50 }),
    notes: Nullable(Type.String({ maxLength: 10_000 })),
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
  },
  { additionalProperties: false },
);

export const UpdateGuestBody = Type.Object(
  {
    name: Type.Optional(Name),
    email: Type.Optional(Nullable(Email)),
    phone: Type.Optional(Nullable(Phone)),
    tags: Type.Optional(Tags),
    notes: Type.Optional(Nullable(Notes)),
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
  },
  { additionalProperties: false },
);
