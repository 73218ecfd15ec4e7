// Owns the schemas every route shares: the success and error envelopes, list metadata,
// pagination query and the standard error responses, so OpenAPI documents each of them once.
import { type Static, type TSchema, Type } from 'typebox';
import { ERROR_STATUS, type ErrorCode } from './errors.js';
import { type IdPrefix, idPattern } from './ids.js';

const errorEnvelope = (codes: readonly string[], $id: string, description: string) =>
  Type.Object(
    {
      success: Type.Literal(false),
      error: Type.Object({
        code: Type.Enum([...codes], { examples: [codes[0]] }),
        message: Type.String({ maxLength: 2000 }),
        details: Type.Optional(Type.Unknown()),
      }),
    },
    { $id, description },
  );

const ALL_CODES = Object.keys(ERROR_STATUS) as ErrorCode[];

/** The error envelope with any of the API's codes. */
export const ErrorBody = errorEnvelope(ALL_CODES, 'Error', 'Error envelope');

/** The error envelope of one HTTP status, its `error.code` one of the codes that status carries. */
export const ERROR_BODIES = [...new Set(Object.values(ERROR_STATUS))].map((status) =>
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
      description:
        "Walk the list: the previous page's meta.nextCursor, for the next `limit` items after it (instead of " +
        '`page`; with the same filters).',
    }),
  ),
};

/** A record's id as the API writes it: `<prefix>_` and a 26-character lowercase ULID (src/lib/ids.ts). */
export const RecordId = (prefix: IdPrefix) =>
  Type.String({ maxLength: 64, pattern: idPattern(prefix), examples: [`${prefix}_01jd8x3k5q7w9e2r4t6y8v0m1n`] });

export const IdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 64 }) });

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
