// Owns generating the OpenAPI 3.1 document: @fastify/swagger set up with the API's description and
// its security schemes (a staff JWT, an API key, a stream ticket, the providers' signatures), every
// route documented through src/lib/openapi.ts, and on each route whose `config.access` is not public
// the bearer requirement, plus the API key requirement with its scope where the route declares
// `config.scope`, and the stream ticket where it declares `config.ticket`. docs.ts serves the document.

import swagger from '@fastify/swagger';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { API_INTRODUCTION } from '../lib/api-introduction.js';
import { documentRoute } from '../lib/openapi.js';
import { linkCreates } from '../lib/openapi-examples.js';
import { componentRef, discriminated, JSON_COMPONENTS } from '../lib/openapi-limits.js';
import { withDocumentedRules } from '../lib/openapi-rules.js';
import { EVENT_DATA, EVENT_RECORDS, EVENT_TYPES } from '../modules/events/schemas.js';
import { CUSTOM_KEY, SETTINGS } from '../modules/settings/registry.js';

type Schema = Record<string, unknown>;

/**
 * The shapes the response serializers leave open, stated in the document: each event type's
 * `data` record, each setting key's `value`, the values in an event's `changes`. (A serializer
 * given a union would check every event or setting against each branch to choose how to write
 * it; the suite's response validation holds every answer to the document instead.)
 */
function withShapes<T>(doc: T): T {
  const schemas = (doc as { components?: { schemas?: Record<string, Schema> } }).components?.schemas;
  if (schemas === undefined) return doc;
  Object.assign(schemas, JSON_COMPONENTS, EVENT_RECORDS);
  const event = schemas.Event;
  if (event !== undefined) {
    const props = event.properties as Record<string, Schema>;
    const change = props.changes?.additionalProperties as Schema | undefined;
    if (change !== undefined) {
      change.properties = { from: componentRef('JsonValue'), to: componentRef('JsonValue') };
      change.required = ['from', 'to'];
    }
    const records = [...new Set(Object.values(EVENT_DATA))];
    schemas.Event = discriminated(
      event,
      'type',
      'data',
      records.map((record) => [
        { type: 'string', enum: EVENT_TYPES.filter((t) => EVENT_DATA[t] === record) },
        {
          ...componentRef(record),
          description:
            record in EVENT_RECORDS
              ? 'The moment reported'
              : `The ${record} after the change (as it was, for a deletion)`,
        },
      ]),
    );
  }
  const setting = schemas.Setting;
  if (setting !== undefined) {
    schemas.Setting = discriminated(setting, 'key', 'value', [
      ...Object.entries(SETTINGS).map(([key, def]): [Schema, Schema] => [
        { type: 'string', const: key },
        { ...(def.schema as Schema), description: def.description },
      ]),
      [
        { type: 'string', maxLength: 100, pattern: CUSTOM_KEY.source },
        { ...componentRef('JsonValue'), description: 'Any JSON up to 64 KiB; null once the key is reset' },
      ],
    ]);
  }
  return doc;
}

export default fp(
  async function openapi(app: FastifyInstance) {
    await app.register(swagger, {
      openapi: {
        openapi: '3.1.0',
        info: {
          title: 'Guest Messaging and Operations API',
          version: '1.0.0',
          description: API_INTRODUCTION,
        },
        // x-internal (an OpenAPI extension the types do not know): this server is for outside integrators.
        servers: [{ url: '/', 'x-internal': false } as { url: string }],
        components: {
          securitySchemes: {
            bearerAuth: {
              type: 'http',
              scheme: 'bearer',
              bearerFormat: 'JWT',
              description:
                'A JWT from POST /auth/login, following RFC8725 (JWT best current practices): HS256 only, ' +
                'verified against an explicit algorithm list, with exp, iat, jti, iss and aud required.',
            },
            twilioSignature: {
              type: 'apiKey',
              in: 'header',
              name: 'X-Twilio-Signature',
              description:
                "Twilio's request signature: base64 HMAC-SHA1, keyed with TWILIO_AUTH_TOKEN, of PUBLIC_URL + the path " +
                'and each form parameter name and value, sorted by name.',
            },
            whatsappSignature: {
              type: 'apiKey',
              in: 'header',
              name: 'X-Hub-Signature-256',
              description:
                "Meta's webhook signature: sha256= and the hex HMAC-SHA256 of the raw body, keyed with WHATSAPP_APP_SECRET.",
            },
            emailInboundBasic: {
              type: 'http',
              scheme: 'basic',
              description:
                'HTTP Basic auth for the inbound e-mail relay: any user name, the password EMAIL_INBOUND_SECRET.',
            },
            streamTicket: {
              type: 'apiKey',
              in: 'query',
              name: 'ticket',
              description:
                'A one-use stream ticket from POST /events/stream-tickets, for GET /events/stream only: a ' +
                "browser's EventSource cannot send an Authorization header. It opens one stream within 60 s, as " +
                'the caller who made it; a used, unknown or expired ticket is 401 TOKEN_INVALID.',
            },
            apiKeyAuth: {
              type: 'http',
              scheme: 'bearer',
              bearerFormat: 'gma_<id>_<secret>',
              description:
                'An API key made by an admin (POST /api-keys), sent as `Authorization: Bearer gma_…`, for ' +
                'server-to-server use. It may call an operation only when it holds the scope the operation ' +
                'names in `x-scopes` and its description (`<resource>:write` includes `<resource>:read`); ' +
                'otherwise 403 FORBIDDEN naming the scope. Operations without this scheme take a staff token only.',
            },
          },
        },
      },
      transform: documentRoute,
      transformObject: (doc) =>
        withDocumentedRules(withShapes(linkCreates('openapiObject' in doc ? doc.openapiObject : doc.swaggerObject))),
      refResolver: { buildLocalReference: (json, _base, _frag, i) => String(json.$id ?? `def-${i}`) },
    });
    // Routes registered after this plugin: the declared access decides the documented security.
    app.addHook('onRoute', (route) => {
      const access = route.config?.access;
      if (route.schema && access !== undefined && access !== 'public') {
        const scope = route.config?.scope;
        // The scope itself is in `x-scopes` and the description (src/lib/openapi.ts): OpenAPI lists
        // scopes in a requirement only for OAuth2 and OpenID Connect schemes.
        const security: Record<string, string[]>[] = [{ bearerAuth: [] }];
        if (scope !== undefined) security.push({ apiKeyAuth: [] });
        // A route that takes a stream ticket in its query (src/plugins/gate.ts) documents it as a scheme.
        if (route.config?.ticket === true) security.push({ streamTicket: [] });
        route.schema.security = security;
      }
    });
  },
  { name: 'openapi' },
);
