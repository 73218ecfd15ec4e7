// Owns the schemas every route shares: the success and error envelopes, list metadata,
// pagination query and the standard error responses, so OpenAPI documents each of them once.
import { type Static, type TSchema, Type } from 'typebox';
import { ERROR_STATUS, type ErrorCode } from './errors.js';
import { type IdPrefix, idPattern } from './ids.js';

/** A field a request got wrong (dotted path into the part: `email`, `items.2.phone`, `query`) and why. */
export const FieldError = Type.Object(
  {
    field: Type.String({ maxLength: 1000, examples: ['email'] }),
    message: Type.String({ maxLength: 2000, examples: ['must match format "email"'] }),
  },
  { additionalProperties: false },
);

/** `error.details` by status: what each kind of error adds for a program to act on. */
const DETAILS: Partial<Record<number, TSchema>> = {
  400: Type.Array(FieldError, {
    maxItems: 1000,
    description: 'Every field found wrong; absent when the body could not be read at all',
  }),
  403: Type.Object(
    { requiredScope: Type.String({ maxLength: 64, description: 'The scope the API key lacks' }) },
    { additionalProperties: false },
  ),
  409: Type.Union([
    Type.Array(
      Type.Object(
        {
          field: Type.String({ maxLength: 64 }),
          message: Type.String({ maxLength: 2000 }),
          existingId: Type.Optional(
            Type.String({
              maxLength: 64,
              description: 'The record already holding the value (a taken e-mail or phone)',
            }),
          ),
        },
        { additionalProperties: false },
      ),
      { maxItems: 10, description: 'The fields in conflict' },
    ),
    Type.Object(
      {
        window: Type.Literal('whatsapp_24h'),
        lastInboundAt: Type.Union([Type.String({ format: 'date-time', maxLength: 30 }), Type.Null()], {
          description: "The guest's last WhatsApp message; null when they never wrote on WhatsApp",
        }),
      },
      { additionalProperties: false, description: 'Free text to a guest outside the WhatsApp 24-hour window' },
    ),
  ]),
  500: Type.Object(
    { requestId: Type.String({ maxLength: 128, description: 'Quote it when reporting the problem' }) },
    { additionalProperties: false },
  ),
};

/** `error.details` of an error with any of `statuses` (absent when none of them carries details). */
export function errorDetails(statuses: readonly number[]): TSchema | undefined {
  const shapes = [...new Set(statuses)].flatMap((s) => (DETAILS[s] === undefined ? [] : [DETAILS[s]!]));
  if (shapes.length === 0) return undefined;
  return shapes.length === 1 ? shapes[0] : Type.Union(shapes);
}

const errorEnvelope = (codes: readonly ErrorCode[], $id: string, description: string) => {
  const details = errorDetails(codes.map((c) => ERROR_STATUS[c]));
  return Type.Object(
    {
      success: Type.Literal(false),
      error: Type.Object({
        code: Type.Enum([...codes], { examples: [codes[0]] }),
        message: Type.String({ maxLength: 2000 }),
        ...(details === undefined ? {} : { details: Type.Optional(details) }),
      }),
    },
    { $id, description },
  );
};

const ALL_CODES = Object.keys(ERROR_STATUS) as ErrorCode[];

/** The error envelope with any of the API's codes. */
export const ErrorBody = errorEnvelope(ALL_CODES, 'Error', 'Error envelope');

/**
 * Statuses answered before or outside any operation: an unrouted method (405), a request not in on
 * time (408), headers over the limit (431). No operation lists them, so they have no component of
 * their own; the API's introduction names them and `Error` carries their codes.
 */
const OUTSIDE_OPERATIONS: ReadonlySet<number> = new Set([405, 408, 431]);

/** The error envelope of one HTTP status, its `error.code` one of the codes that status carries. */
export const ERROR_BODIES = [...new Set(Object.values(ERROR_STATUS))]
  .filter((status) => !OUTSIDE_OPERATIONS.has(status))
  .map((status) =>
    errorEnvelope(
      ALL_CODES.filter((c) => ERROR_STATUS[c] === status),
      `Error${status}`,
      `Error envelope of a ${status}`,
    ),
  );

const Count = Type.Integer({ format: 'int64', minimum: 0, maximum: Number.MAX_SAFE_INTEGER });
export const ListMeta = Type.Object(
  {
    page: Type.Optional(Type.Integer({ format: 'int32', minimum: 1, maximum: 1_000_000 })),
    limit: Type.Integer({ format: 'int32', minimum: 1, maximum: 100 }),
    total: Type.Optional(Count),
    pages: Type.Optional(Count),
    nextCursor: Type.Union([Type.String({ maxLength: 1024 }), Type.Null()], {
      description: 'Pass as `cursor` for the page after this one; null on the last page',
    }),
  },
  {
    description:
      'A numbered page has page, limit, total, pages and nextCursor; a cursor page (asked with `cursor`) has ' +
      'limit and nextCursor only.',
  },
);
export type ListMeta = Static<typeof ListMeta>;

/** A numbered page only: ranked search results have no cursor. */
export const NumberedPageQuery = {
  page: Type.Optional(
    Type.Integer({ format: 'int32', minimum: 1, maximum: 1_000_000, description: 'Page number, from 1 (default 1)' }),
  ),
  limit: Type.Optional(Type.Integer({ format: 'int32', minimum: 1, maximum: 100, default: 20 })),
};

export const PageQuery = {
  ...NumberedPageQuery,
  cursor: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 1024,
      pattern: '^[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+$',
      'x-pattern-message': "must be a cursor as given in a page's meta.nextCursor",
      description:
        "Walk the list: the previous page's meta.nextCursor, for the next `limit` items after it (instead of " +
        '`page`; with the same filters).',
    }),
  ),
};

/**
 * The id the document's examples give a record of `prefix`: one stable id per type, so a reader
 * (and the replay of every example in CI) can tell which record an example means.
 */
export const exampleId = (prefix: string) => `${prefix}_01jd8x3k5q7w9e2r4t6y8v0m1n`;

/** A record's id as the API writes it: `<prefix>_` and a 26-character lowercase ULID (src/lib/ids.ts). */
export const RecordId = (prefix: IdPrefix) =>
  Type.String({ maxLength: 64, pattern: idPattern(prefix), examples: [exampleId(prefix)] });

/** The pattern of an id of any of `prefixes` (an actor that may be a staff member or an API key …). */
export const idsPattern = (prefixes: readonly IdPrefix[]) =>
  prefixes.length === 1 ? idPattern(prefixes[0]!) : `^(${prefixes.join('|')})_[0-9a-hjkmnp-tv-z]{26}$`;

/** A reference to a record in an answer: its id, with the id's pattern. */
export const RefId = (prefixes: IdPrefix | readonly IdPrefix[], description?: string) => {
  const list = typeof prefixes === 'string' ? [prefixes] : prefixes;
  return Type.String({
    maxLength: 64,
    pattern: idsPattern(list),
    examples: [exampleId(list[0]!)],
    ...(description === undefined ? {} : { description }),
  });
};

/**
 * A reference to a record in a request: a malformed one is refused by its pattern (400
 * VALIDATION_ERROR), like one naming no record. `extra`: another word the field takes (`unassigned`).
 */
export const RefIdInput = (prefixes: IdPrefix | readonly IdPrefix[], description: string, extra?: string) => {
  const list = typeof prefixes === 'string' ? [prefixes] : prefixes;
  const ids = idsPattern(list);
  return Type.String({
    minLength: 1,
    maxLength: 64,
    pattern: extra === undefined ? ids : `^(${extra}|${ids.slice(1, -1)})$`,
    'x-pattern-message': `must be ${list.map((p) => `a ${p}_ id`).join(' or ')}${extra === undefined ? '' : ` or ${extra}`}`,
    description,
    examples: [exampleId(list[0]!)],
  });
};

/**
 * A record's id in the path. Not held to the id pattern: a path naming no record is 404 NOT_FOUND
 * (docs/decisions.md, Requests and responses), whatever its form.
 */
export const IdParams = Type.Object({
  id: Type.String({
    minLength: 1,
    maxLength: 64,
    description: "The record's id: its type's prefix, _ and 26 characters of lowercase Crockford base32; 404 otherwise",
  }),
});

export const Ok = <T extends TSchema>(data: T) => Type.Object({ success: Type.Literal(true), data });
export const OkList = <T extends TSchema>(item: T) =>
  Type.Object({ success: Type.Literal(true), data: Type.Array(item, { maxItems: 100 }), meta: ListMeta });

export const Nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()]);

type ErrorStatus = (typeof ERROR_STATUS)[ErrorCode];
const err = (status: ErrorStatus, description: string) => ({ ...Type.Ref(`Error${status}`), description });
/** An error response in the envelope, for a route's own codes (of `status`, when given). */
export const errorResponse = (description: string, status?: ErrorStatus) =>
  status === undefined ? { ...Type.Ref('Error'), description } : err(status, description);

/** The error responses every authenticated route can give; routes add their own on top. */
export const STANDARD_ERRORS = {
  400: err(400, 'VALIDATION_ERROR: the request is malformed or a field is invalid'),
  401: err(401, 'TOKEN_MISSING, TOKEN_INVALID, TOKEN_EXPIRED or UNAUTHORIZED'),
  403: err(403, 'FORBIDDEN: the role may not do this'),
  404: err(404, 'NOT_FOUND'),
  429: err(429, 'RATE_LIMITED'),
  500: err(500, 'INTERNAL_ERROR'),
  503: err(503, 'SERVICE_UNAVAILABLE: the store cannot be reached; retry after Retry-After seconds'),
};
export const CONFLICT_ERROR = { 409: err(409, 'CONFLICT: a unique value is taken') };
export const BODY_ERRORS = {
  413: err(413, 'PAYLOAD_TOO_LARGE: the body is over 1 MiB'),
  415: err(415, 'UNSUPPORTED_MEDIA_TYPE: the body is not JSON, or is sent with a Content-Encoding'),
};

export const ok = <T>(data: T) => ({ success: true as const, data });
