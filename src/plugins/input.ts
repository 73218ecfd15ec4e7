// Owns input hygiene that no route schema expresses, checked on path parameters, query and body
// before validation: the NUL character (U+0000), which PostgreSQL cannot store (SQLite can, and
// the API must answer the same on both stores), and nesting deeper than MAX_JSON_DEPTH, which
// would otherwise overflow the stack after parsing and answer 500. Before parsing: a body sent
// with a content coding (gzip, br, …), which the API does not decode, is refused as such (415)
// instead of failing as JSON it cannot read (docs/decisions.md).
import { isUtf8 } from 'node:buffer';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import sjson from 'secure-json-parse';
import { AppError, validation } from '../lib/errors.js';
import { inputProblem } from '../lib/validation.js';

/** The coding of a request body, when it is one the API would have to decode; else null. */
function bodyCoding(headers: Record<string, string | string[] | undefined>): string | null {
  const coding = headers['content-encoding'];
  if (coding === undefined) return null;
  const hasBody = headers['transfer-encoding'] !== undefined || (headers['content-length'] ?? '0') !== '0';
  if (!hasBody) return null;
  const value = String(coding).trim().toLowerCase();
  return value === '' || value === 'identity' ? null : value;
}

/**
 * JSON bodies, parsed as Fastify would (a `__proto__` key or `constructor.prototype` refused), but
 * saying which rule a body broke: a poisoned key is valid JSON and must not read "not valid JSON".
 */
function parseJson(body: string, bulk: boolean): unknown {
  if (body === '') throw new AppError('VALIDATION_ERROR', 'The body is empty; send a JSON object');
  try {
    // A bulk body's items stand alone: a poisoned key fails its item only, when the
    // item is checked against its schema (`runBulk`), which allows no such key. JSON.parse makes
    // `__proto__` an own, inert data property; nothing copies an item before it passes its schema.
    if (bulk) return JSON.parse(body);
    return sjson.parse(body, null, { protoAction: 'error', constructorAction: 'error' });
  } catch (err) {
    if (/prototype property|constructor property/.test((err as Error).message)) {
      throw validation(
        [{ field: 'body', message: 'must not hold a "__proto__" key, nor a "constructor" key holding "prototype"' }],
        'The body holds a "__proto__" key or "constructor.prototype", which is refused',
      );
    }
    throw validation([{ field: 'body', message: 'is not valid JSON' }], 'The body is not valid JSON');
  }
}

/** Whether a schema takes an array (a list parameter may be given several times). */
function takesArray(schema: unknown): boolean {
  if (typeof schema !== 'object' || schema === null) return false;
  const s = schema as { type?: unknown; anyOf?: unknown[]; oneOf?: unknown[] };
  if (s.type === 'array' || (Array.isArray(s.type) && s.type.includes('array'))) return true;
  return [...(s.anyOf ?? []), ...(s.oneOf ?? [])].some(takesArray);
}

/**
 * A query parameter given more than once where the operation takes one value: said as such, rather
 * than as the type error the list of values would otherwise cause ("must be integer").
 */
function repeatedParameter(query: unknown, schema: unknown) {
  if (typeof query !== 'object' || query === null) return null;
  const properties = (schema as { properties?: Record<string, unknown> } | undefined)?.properties ?? {};
  for (const [name, value] of Object.entries(query)) {
    if (Array.isArray(value) && !takesArray(properties[name])) {
      return { field: name, message: 'is given more than once; give it once' };
    }
  }
  return null;
}

/** A bulk body without its items' contents, which `runBulk` checks one by one. */
function bulkEnvelope(body: unknown): unknown {
  if (typeof body !== 'object' || body === null || !Array.isArray((body as { items?: unknown }).items)) return body;
  return { ...(body as object), items: [] };
}

export default fp(
  async function input(app: FastifyInstance) {
    app.removeContentTypeParser('application/json');
    app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
      const bytes = body as Buffer;
      // Decoding replaces bytes that are not UTF-8 with U+FFFD: the text stored would not be the
      // text sent. Refused instead, as RFC 8259 §8.1 requires JSON to be UTF-8.
      if (!isUtf8(bytes)) {
        return done(
          validation([{ field: 'body', message: 'is not valid UTF-8' }], 'The body is not valid UTF-8'),
          undefined,
        );
      }
      // An operation that takes no body reads none: a client sending its usual JSON Content-Type
      // with nothing after it is not wrong.
      if (bytes.length === 0 && request.routeOptions.schema?.body === undefined) return done(null, undefined);
      try {
        done(null, parseJson(bytes.toString('utf8'), request.routeOptions.config.bucket === 'bulk'));
      } catch (err) {
        done(err as Error, undefined);
      }
    });
    app.addHook('preParsing', (request, _reply, payload, done) => {
      const coding = bodyCoding(request.headers);
      if (coding === null) return done(null, payload);
      // RFC 9110 §15.5.16: 415 for a content coding the server does not accept, and Accept-Encoding
      // in the answer says which it does.
      done(
        new AppError(
          'UNSUPPORTED_MEDIA_TYPE',
          `Content-Encoding "${coding.slice(0, 40)}" is not supported; send the body uncompressed`,
          undefined,
          { 'accept-encoding': 'identity' },
        ),
      );
    });
    app.addHook('preValidation', (request, _reply, done) => {
      const problem =
        repeatedParameter(request.query, request.routeOptions.schema?.querystring) ??
        inputProblem(request.params, 'params') ??
        inputProblem(request.query, 'query') ??
        inputProblem(request.routeOptions.config.bucket === 'bulk' ? bulkEnvelope(request.body) : request.body, 'body');
      done(problem === null ? undefined : validation([problem], `${problem.field}: ${problem.message}`));
    });
  },
  { name: 'input', dependencies: ['errors'] },
);
