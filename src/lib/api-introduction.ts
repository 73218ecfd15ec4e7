// Owns the introduction of the OpenAPI document (info.description): what an integrator needs
// before the first call. /docs shows it above the operations, and generated clients carry it.

export const API_INTRODUCTION = `JSON REST API for guest conversations over WhatsApp, SMS, e-mail and web chat, and the
work that follows: tasks for housekeeping and the front desk, a knowledge base, staff and settings.
Everything lives under \`/api/v1\`.

## Authentication

\`POST /api/v1/auth/login\` with \`{ "email", "password" }\` answers \`{ token, expiresAt, user }\`. Send the
token as \`Authorization: Bearer <token>\` on every other call. Tokens last 24 hours by default;
\`POST /auth/refresh\` exchanges a valid one for a new one, \`POST /auth/logout\` revokes it at once.
A role (admin, manager, staff) decides what a caller may do; each operation lists its roles
(\`x-roles\`). A staff-role caller sees only the conversations and tasks assigned to them.

## The envelope

Success: \`{ "success": true, "data": …, "meta"?: … }\`. Error:
\`{ "success": false, "error": { "code", "message", "details"? } }\`. Programs read \`error.code\`; the
message is for people. Every response carries \`X-Request-Id\` (send your own to correlate logs).

## Errors

| status | codes |
| --- | --- |
| 400 | VALIDATION_ERROR: \`details\` names every bad field as \`{ field, message }\`; unknown fields are refused |
| 401 | TOKEN_MISSING, TOKEN_INVALID, TOKEN_EXPIRED, INVALID_CREDENTIALS, UNAUTHORIZED (deactivated) |
| 403 | FORBIDDEN: the role may not, or the record is someone else's (404 if it does not exist) |
| 404 | NOT_FOUND |
| 405 | METHOD_NOT_ALLOWED: the path exists, the method does not (\`Allow\` lists those it takes); any path |
| 408, 431 | REQUEST_TIMEOUT (the request did not arrive in time), HEADERS_TOO_LARGE (over 16 KiB); any request |
| 409 | CONFLICT: a unique value is taken (\`details\` names the existing record) |
| 413, 415 | PAYLOAD_TOO_LARGE (over 1 MiB), UNSUPPORTED_MEDIA_TYPE (bodies are JSON) |
| 429 | RATE_LIMITED, with \`Retry-After\` in seconds |
| 500, 503 | INTERNAL_ERROR (quote the request id), SERVICE_UNAVAILABLE (retry after \`Retry-After\`) |

Every limit a request is held to is in its schema, as a pattern where it is a form: no string or key
may hold U+0000; e-mails follow the pattern given (stricter than \`format: email\`); ids a body or
filter names are \`<prefix>_\` and 26 lowercase base32 characters; a department is one the
\`departments\` setting lists. A value outside them is a 400 VALIDATION_ERROR naming the field.

## Rate limits

100 requests per 60 s per staff member (per IP before login) and 10 per 60 s for the bulk
operations, unless the operator set other figures. Every response carries \`X-RateLimit-Limit\`,
\`X-RateLimit-Remaining\` and \`X-RateLimit-Reset\` (the Unix time in seconds when the window resets).

## Pagination

Every list takes \`page\` (from 1) and \`limit\` (1–100, default 20) and answers
\`meta: { page, limit, total, pages, nextCursor }\`. To walk a whole list, pass \`meta.nextCursor\` back
as \`cursor\` (or follow the \`Link: <…>; rel="next"\` header) until it is null: each such page costs
the same at any depth, and rows that did not change during the walk are each seen once. A cursor
is opaque and only valid with the filters it came with. Search results ranked by relevance are
paged by number only.

## Events and webhooks

Every change is an event. Read them with \`GET /events?after=<cursor>\` (oldest first, poll with
\`meta.nextCursor\`), live with \`GET /events/stream\` (Server-Sent Events, resumable with
\`Last-Event-ID\`), or have them pushed to your endpoint by a webhook (\`POST /webhooks\`): signed
with HMAC-SHA256 (\`Webhook-Signature\`), retried with backoff, each with a unique \`Webhook-Id\` to
make handling idempotent.

## Versioning

\`/api/v1\` only grows: new operations, new optional request fields, new response fields, new
event types and new error codes may appear at any time, so ignore what you do not know. Removing
or renaming anything, or making a request stricter, happens only in a new version (\`/api/v2\`),
announced on the operations concerned with \`Deprecation\` and \`Sunset\` headers; both versions
then run side by side for at least 12 months.`;
