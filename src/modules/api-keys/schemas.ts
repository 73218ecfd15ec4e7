// Owns the API key resource's request and response schemas.
import { type Static, Type } from 'typebox';
import { SCOPES } from '../../lib/auth.js';
import { exampleId, Nullable, PageQuery, RecordId } from '../../lib/schemas.js';

const DateTime = Type.String({ format: 'date-time', maxLength: 30 });
const Name = Type.String({
  minLength: 1,
  maxLength: 200,
  description: 'What the key is for (e.g. "PMS sync")',
  examples: ['PMS sync'],
});
const Scopes = Type.Array(Type.Enum([...SCOPES]), {
  minItems: 1,
  maxItems: SCOPES.length,
  uniqueItems: true,
  description:
    'What the key may do. `<resource>:write` includes `<resource>:read`. Each operation names the scope it ' +
    'needs (`x-scopes`); a key without it gets 403 FORBIDDEN naming the scope.',
});

export const ApiKey = Type.Object(
  {
    id: RecordId('key'),
    name: Type.String({ maxLength: 200, examples: ['PMS sync'] }),
    scopes: Type.Array(Type.Enum([...SCOPES]), { maxItems: SCOPES.length }),
    expiresAt: Nullable({ ...DateTime, description: 'After this the key answers 401 TOKEN_EXPIRED; null: never' }),
    lastUsedAt: Nullable({ ...DateTime, description: 'Last authenticated use, to the minute' }),
    revokedAt: Nullable({ ...DateTime, description: 'When the key was revoked (DELETE); it is refused since' }),
    createdAt: DateTime,
    updatedAt: DateTime,
  },
  { $id: 'ApiKey' },
);
export type ApiKeyView = Static<typeof ApiKey>;

export const ApiKeyWithSecret = Type.Object(
  {
    ...ApiKey.properties,
    key: Type.String({
      maxLength: 100,
      description: 'The key, shown only in this response: send it as `Authorization: Bearer gma_…`',
      examples: [`gma_${exampleId('key')}_q3Jx9TzW0vLb5N2mYc8Hd4Rk7Ps1Ga6Ue0Fo3Vi9Qn2`],
    }),
  },
  { $id: 'ApiKeyWithSecret' },
);

export const CreateApiKeyBody = Type.Object(
  {
    name: Name,
    scopes: Scopes,
    expiresAt: Type.Optional(
      Nullable({ ...DateTime, description: 'When the key stops working (in the future); omitted or null: never' }),
    ),
  },
  { additionalProperties: false },
);
export type CreateApiKeyInput = Static<typeof CreateApiKeyBody>;

export const UpdateApiKeyBody = Type.Object(
  {
    name: Type.Optional(Name),
    scopes: Type.Optional(Scopes),
  },
  { additionalProperties: false, minProperties: 1 },
);
export type UpdateApiKeyInput = Static<typeof UpdateApiKeyBody>;

export const MAX_GRACE_SECONDS = 7 * 86400;

export const RotateApiKeyBody = Type.Object(
  {
    graceSeconds: Type.Optional(
      Type.Integer({
        format: 'int32',
        minimum: 0,
        maximum: MAX_GRACE_SECONDS,
        default: 0,
        description: 'How long the replaced secret keeps working (0: it stops at once; at most 7 days)',
      }),
    ),
  },
  { additionalProperties: false },
);

export const ListApiKeysQuery = Type.Object(PageQuery, { additionalProperties: false });

/** A revoked key stays readable (GET shows its revokedAt): the answer says revoked, not deleted. */
export const RevokedApiKey = Type.Object({
  id: Type.String({ maxLength: 64 }),
  revoked: Type.Literal(true),
  revokedAt: Type.String({ format: 'date-time', maxLength: 30 }),
});
