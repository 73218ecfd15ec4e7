// The response check every `call()` runs (test/response-validation.ts) refuses what breaks the
// served document: a body against its schema, a status or media type it does not list.
import assert from 'node:assert/strict';
import test from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { buildTestApp } from './helpers.js';
import { checkResponse } from './response-validation.js';

const response = (statusCode: number, body: unknown, type = 'application/json; charset=utf-8') =>
  ({
    statusCode,
    headers: { 'content-type': type },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  }) as unknown as LightMyRequestResponse;

test('a response that breaks the served document fails the test that received it', async (t) => {
  if (process.env.RESPONSE_VALIDATION === '0') return t.skip('RESPONSE_VALIDATION=0');
  const app = await buildTestApp(t);
  const meta = { page: 1, limit: 20, total: 0, pages: 0, nextCursor: null };
  await checkResponse(app, 'GET', '/api/v1/conversations', response(200, { success: true, data: [], meta }));
  await assert.rejects(
    checkResponse(app, 'GET', '/api/v1/conversations', response(200, { success: true, data: [{ id: 1 }], meta })),
    /breaks the documented schema/,
  );
  await assert.rejects(
    checkResponse(app, 'GET', '/api/v1/conversations?page=2', response(200, { success: true, data: [] })),
    /breaks the documented schema/,
  );
  await assert.rejects(
    checkResponse(app, 'GET', '/api/v1/conversations', response(418, { success: false })),
    /status not documented/,
  );
  await assert.rejects(
    checkResponse(app, 'GET', '/api/v1/conversations', response(200, '<html/>', 'text/html')),
    /text\/html not documented/,
  );
  // A literal segment is matched before a parameter: /conversations/bulk is not /conversations/{id}.
  await assert.rejects(
    checkResponse(app, 'PATCH', '/api/v1/conversations/bulk', response(200, { success: true, data: { id: 'x' } })),
    /breaks the documented schema/,
  );
  // What the document does not describe is not checked (an unknown path, a method it lacks).
  await checkResponse(app, 'GET', '/api/v1/nowhere', response(404, { anything: true }));
  await checkResponse(app, 'OPTIONS', '/api/v1/conversations', response(204, ''));
});
