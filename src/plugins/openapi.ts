// Owns generating the OpenAPI 3.1 document: @fastify/swagger set up with the API's description and
// bearer security scheme, every route documented through src/lib/openapi.ts, and the bearer
// requirement put on each route whose `config.access` is not public. docs.ts serves the document.

import swagger from '@fastify/swagger';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { API_INTRODUCTION } from '../lib/api-introduction.js';
import { documentRoute } from '../lib/openapi.js';
import { linkCreates } from '../lib/openapi-examples.js';

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
          },
        },
      },
      transform: documentRoute,
      transformObject: (doc) => linkCreates('openapiObject' in doc ? doc.openapiObject : doc.swaggerObject),
      refResolver: { buildLocalReference: (json, _base, _frag, i) => String(json.$id ?? `def-${i}`) },
    });
    // Routes registered after this plugin: the declared access decides the documented security.
    app.addHook('onRoute', (route) => {
      const access = route.config?.access;
      if (route.schema && access !== undefined && access !== 'public') {
        route.schema.security = [{ bearerAuth: [] }];
      }
    });
  },
  { name: 'openapi' },
);
