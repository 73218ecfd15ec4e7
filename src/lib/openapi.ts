// Owns what the OpenAPI document says about every route that its own schema cannot: the headers
// the gate puts on every counted response (X-RateLimit-*, Retry-After) and the X-Request-Id on
// every response, who may call it (`x-roles` from the route's own `config.access`, `x-scopes`: the
// API key scope from its `config.scope`, empty when keys may not call it), and what a success
// answer holds.
import type { FastifySchema, RouteOptions } from 'fastify';
import { documentedBulkBody } from './bulk.js';
import { withExample, withPathExamples } from './openapi-examples.js';
import { integrationDocs } from './openapi-integration.js';
import { withInputLimits } from './openapi-limits.js';

const int = (description: string, format: 'int32' | 'int64', maximum: number) => ({
  type: 'integer',
  format,
  minimum: 0,
  maximum,
  description,
});

const LOCATION = {
  Location: {
    type: 'string',
    maxLength: 2048,
    description: "The created record's URL (its GET), as a path on this server",
  },
};
const REQUEST_ID = {
  type: 'string',
  maxLength: 128,
  pattern: '^[A-Za-z0-9._:-]{1,128}$',
  'x-pattern-message': 'must be 1 to 128 letters, digits and . _ : -',
  description: 'The request id (yours when you sent a valid X-Request-Id); quote it when reporting a problem',
};
const RATE_LIMIT = {
  'X-RateLimit-Limit': int('Requests allowed in the current window for this bucket', 'int32', 10_000_000),
  'X-RateLimit-Remaining': int('Requests left in the current window', 'int32', 10_000_000),
  'X-RateLimit-Reset': int('Unix time in seconds when the window resets', 'int64', 253402300799),
};
const RETRY_AFTER = { 'Retry-After': int('Seconds to wait before retrying', 'int32', 86_400) };
type Schema = Record<string, unknown>;

/** What a success answer holds, named from the operation's verb (the document's "Default Response" otherwise). */
const SUCCESS: [RegExp, string][] = [
  [/^list/, 'One page of the list, with `meta` (page, limit, total, pages, nextCursor)'],
  [/^bulk/, 'One result per item, in item order: each `{ index, success, data | error }`'],
  [/^(create|send)/, 'Created: the new record'],
  [/^(update|replace|set)/, 'The record as stored after the change'],
  [/^reset/, 'The setting as it reads after the reset'],
  [
    /^deleteApiKey$/,
    'Revoked: `{ id, revoked: true, revokedAt }`; the key stays readable, and revoking it again changes nothing',
  ],
  [/^delete/, 'Deleted: `{ id, deleted: true }`'],
  [/^(login|refreshToken|changePassword)$/, 'A bearer token, its expiry and the staff member it belongs to'],
  [/^logout$/, 'Logged out: the token is revoked'],
  [/^getCurrentUser$/, 'The staff member the token belongs to'],
  [/^get/, 'The record'],
  [/^check/, 'The probe answer'],
  [/^streamEvents$/, 'A text/event-stream of events, each `id:` + `data:` (JSON as in the feed)'],
  [/^rotateWebhookSecret$/, 'The webhook with its new signing secret (shown this once)'],
  [/^rotateApiKey$/, 'The API key with its new key text (shown this once)'],
  [/^testWebhook$/, 'The delivery queued for the test event'],
  [/^redeliver/, 'The delivery, due again now'],
];

function successDescription(operationId: unknown): string {
  const id = typeof operationId === 'string' ? operationId : '';
  return SUCCESS.find(([verb]) => verb.test(id))?.[1] ?? 'Success';
}

/** Swagger's per-route transform: the route's schema with headers and roles documented. */
export function documentRoute({ schema, url, route }: { schema: FastifySchema; url: string; route: RouteOptions }): {
  schema: FastifySchema;
  url: string;
} {
  if (typeof schema !== 'object' || schema === null) return { schema, url };
  const base = schema as Schema;
  const counted = route.config?.bucket !== false;
  const access = route.config?.access;
  const extra = integrationDocs(route, base);
  const declared = { ...((base.response ?? {}) as Record<string, Schema>) };
  for (const [status, res] of Object.entries(extra.responses)) {
    const own = declared[status];
    declared[status] = own === undefined ? res : { ...own, description: `${own.description}; or ${res.description}` };
  }
  const response: Record<string, Schema> = {};
  for (const [status, res] of Object.entries(declared)) {
    const headers: Schema = { 'X-Request-Id': REQUEST_ID };
    if (counted) Object.assign(headers, RATE_LIMIT);
    if (status === '429' || status === '503' || extra.retryAfter.includes(status)) Object.assign(headers, RETRY_AFTER);
    if (status.startsWith('2')) Object.assign(headers, extra.successHeaders);
    // Headers the route declares on a response of its own (Cache-Control on a stream ticket).
    if (typeof res.headers === 'object' && res.headers !== null) Object.assign(headers, res.headers);
    if (status === '201' && route.config?.location !== false) Object.assign(headers, LOCATION);
    // A copy: the route's own schema also drives the response serializer.
    response[status] = { ...res, headers };
    if (status.startsWith('2')) {
      response[status] = { ...(withExample(res, false, url) as Schema), headers };
      if (res.description === undefined) response[status]!.description = successDescription(base.operationId);
    }
  }
  const out: Schema = { ...base, response };
  if (Object.keys(extra.requestHeaders).length > 0) {
    const own = (base.headers ?? { type: 'object', properties: {} }) as Schema;
    out.headers = { ...own, properties: { ...(own.properties as Schema | undefined), ...extra.requestHeaders } };
  }
  if (out.params !== undefined) out.params = withPathExamples(out.params, url);
  for (const part of ['params', 'querystring', 'headers'] as const) {
    if (out[part] !== undefined) out[part] = withInputLimits(out[part]);
  }
  if (base.body !== undefined) out.body = withExample(withInputLimits(documentedBulkBody(base.body)), true, url);
  if (Array.isArray(access)) {
    out['x-roles'] = [...access];
    const scope = route.config?.scope;
    const scopes = scope === undefined ? [] : typeof scope === 'string' ? [scope] : [...scope];
    out['x-scopes'] = scopes;
    const said = typeof base.description === 'string' ? `${base.description}\n\n` : '';
    out.description =
      scopes.length === 0
        ? `${said}Staff token only: API keys may not call this operation.`
        : `${said}API key scope: ${scopes.map((s) => `\`${s}\``).join(' or ')}.`;
  }
  return { schema: out as FastifySchema, url };
}
