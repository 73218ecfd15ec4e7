// Owns what the OpenAPI document says about the integration-safety headers (docs/integrations.md) that a
// route's own schema cannot: Idempotency-Key on the operations that take one (with its replay
// header and its 409 / 422), ETag on one-record answers, If-None-Match and 304 on one-record GETs,
// If-Match and 412 on the writes that check it. src/lib/openapi.ts merges them into each route.
import type { RouteOptions } from 'fastify';
import { takesIdempotencyKey } from './idempotency.js';

type Schema = Record<string, unknown>;

const REPLAYED = {
  'Idempotent-Replayed': {
    type: 'string',
    enum: ['true'],
    description: 'Present on the replay of an earlier answer to the same Idempotency-Key',
  },
};
const IDEMPOTENCY_KEY = {
  type: 'string',
  minLength: 1,
  maxLength: 255,
  pattern: '^[\\x21-\\x7e]{1,255}$',
  'x-pattern-message': 'must be 1 to 255 visible ASCII characters, e.g. a UUID',
  description:
    'Makes a retry safe: a repeat with the same key (yours, on this operation) within 24 h replays the first ' +
    'answer instead of making the change again (Idempotent-Replayed: true). 1–255 visible ASCII characters, ' +
    'e.g. a UUID.',
};
const IDEMPOTENCY_ERRORS: Record<string, Schema> = {
  409: { $ref: 'Error409', description: 'CONFLICT: the Idempotency-Key is in flight (retry after Retry-After)' },
  422: { $ref: 'Error422', description: 'IDEMPOTENCY_KEY_REUSED: the key was used with another request' },
};

const ETAG = {
  ETag: {
    type: 'string',
    maxLength: 64,
    pattern: '^"[A-Za-z0-9_-]{1,60}"$',
    'x-pattern-message': 'must be an ETag as the API sends it',
    description: 'The record version: send it as If-None-Match on a GET (304 when unchanged) or If-Match on a write',
  },
};
const IF_NONE_MATCH = {
  type: 'string',
  maxLength: 2048,
  pattern: '^[\\x20-\\x7e]{1,2048}$',
  'x-pattern-message': 'must be ETags as the API sends them (visible ASCII)',
  description: 'ETags of copies you hold; when one is current the answer is 304 Not Modified without a body',
};
const IF_MATCH = {
  type: 'string',
  maxLength: 2048,
  pattern: '^[\\x20-\\x7e]{1,2048}$',
  'x-pattern-message': 'must be ETags as the API sends them (visible ASCII)',
  description:
    'Change the record only if it is still at this ETag (from a GET or write answer); otherwise 412 ' +
    'PRECONDITION_FAILED and nothing changes. Checked in the same transaction as the write.',
};
const NOT_MODIFIED = {
  type: 'null',
  description: 'Not Modified: the copy named in If-None-Match is current (no body)',
};
const PRECONDITION = {
  $ref: 'Error412',
  description: 'PRECONDITION_FAILED: the record changed since the ETag in If-Match',
};

/** Whether a route's success answer holds one record (an object `data`, no list `meta`). */
function answersOneRecord(base: Schema, method: string): boolean {
  if (method === 'DELETE') return false;
  const responses = (base.response ?? {}) as Record<string, Schema>;
  return Object.entries(responses).some(([status, res]) => {
    if (!status.startsWith('2')) return false;
    const props = (res.properties ?? {}) as Record<string, Schema>;
    return props.meta === undefined && (props.data as Schema | undefined)?.type === 'object';
  });
}

export interface IntegrationDocs {
  responses: Record<string, Schema>;
  /** Statuses that carry Retry-After. */
  retryAfter: string[];
  successHeaders: Schema;
  requestHeaders: Schema;
}

export function integrationDocs(route: RouteOptions, base: Schema): IntegrationDocs {
  const out: IntegrationDocs = { responses: {}, retryAfter: [], successHeaders: {}, requestHeaders: {} };
  const method = typeof route.method === 'string' ? route.method : '';
  if (!route.url.startsWith('/api/v1')) return out;
  if (takesIdempotencyKey(route.method, route.config)) {
    Object.assign(out.responses, IDEMPOTENCY_ERRORS);
    out.retryAfter.push('409');
    Object.assign(out.successHeaders, REPLAYED);
    out.requestHeaders['Idempotency-Key'] = IDEMPOTENCY_KEY;
  }
  if (answersOneRecord(base, method)) {
    Object.assign(out.successHeaders, ETAG);
    if (method === 'GET') {
      out.responses['304'] = NOT_MODIFIED;
      out.requestHeaders['If-None-Match'] = IF_NONE_MATCH;
    }
  }
  if (route.config?.current !== undefined) {
    out.responses['412'] = PRECONDITION;
    out.requestHeaders['If-Match'] = IF_MATCH;
  }
  return out;
}
