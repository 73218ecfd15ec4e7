// Owns the examples and links of the OpenAPI document: an example value built from each request
// body's, parameter's and success answer's own schema (a schema's `examples`, else its enum,
// default or format, else a value named after the field), each a request or an answer the server
// would take or give (test/openapi-examples.test.ts replays them); and `links` from each create to
// the get, update and delete of what it created, so a reader (and a generated client) sees how the
// calls chain.
import { ID_PREFIX } from './ids.js';
import { exampleId } from './schemas.js';

type Schema = Record<string, unknown>;

/** The moment answers' examples were written at: a record's createdAt, a message's sentAt. */
export const EXAMPLE_TIME = '2026-11-22T06:33:12.000Z';

/**
 * Stands in the generated document for a moment ahead of its reader (a request's `dueAt` or
 * `expiresAt`, a delivery's next attempt); the served document has a date a week after the day
 * it is served there instead (`servedDocument`), so a request example never names the past.
 */
export const EXAMPLE_FUTURE = '2030-01-01T09:00:00.000Z';

/** Date-times that lie ahead in an answer too. */
const FUTURE_NAMES = new Set(['expiresAt', 'dueAt', 'nextAttemptAt']);

/** Nullable fields an answer example leaves null: what has not happened yet to a fresh record. */
const NULL_IN_ANSWERS = new Set([
  'error',
  'autoReply',
  'completedAt',
  'revokedAt',
  'lastUsedAt',
  'sentAt',
  'deliveredAt',
  'readAt',
]);

/** Values for string fields by name, so an example reads like a hotel's data. */
const BY_NAME: Record<string, string> = {
  name: 'Ana Lopes',
  email: 'ana.lopes@example.com',
  phone: '+351912345678',
  title: 'Extra towels for room 412',
  subject: 'Late check-out',
  content: 'Hello! Could we have two extra towels, please?',
  notes: 'Prefers a quiet room',
  description: 'Two bath towels to room 412',
  department: 'housekeeping',
  category: 'general',
  token: 'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.…',
  password: 'correct horse battery staple',
  currentPassword: 'correct horse battery staple',
  newPassword: 'a new long passphrase here',
  temporaryPassword: 'mF3q-8TzK-w2Pd-Lx7c',
  url: 'https://hooks.example.com/guest-messaging',
  secret: 'whsec_3kq8…',
  key: 'hotel',
  code: 'VALIDATION_ERROR',
  eventId: '1842',
  message: 'email: must be an e-mail address like ana@example.com',
  externalId: 'widget-msg-7f3a9c',
  ip: '203.0.113.7',
  userAgent: 'hotel-pms/2.3',
  requestId: 'req-5f2c9a1e',
  type: 'staff',
  tags: 'vip',
  nextCursor: 'WyIyMDI2LTExLTIyVDA2OjMzOjEyLjAwMFoiLCJjbnZfMDFqZDh4M2s1cTd3OWUycjR0Nnk4dTBpMW8iXQ.bm8tc2ln',
};

/** Numbers by name where the smallest allowed value would not read as a real answer. */
const NUMBER_BY_NAME: Record<string, number> = { index: 0 };

/**
 * The id prefix a name stands for: `guestId`, `messageId` and `deliveryId` by the record type
 * before `Id`, a path's collection (`api-keys`, `guests`) by its singular.
 */
export function prefixOf(name: string): string | undefined {
  const camel = name.replace(/-([a-z])/g, (_m, c: string) => c.toUpperCase()).replace(/Id$/, '');
  const prefixes = ID_PREFIX as Record<string, string>;
  return prefixes[camel] ?? prefixes[camel.replace(/s$/, '')];
}

interface Context {
  /** An example of what a caller sends (dates ahead, nullable fields shown) rather than an answer. */
  request: boolean;
  /** The type of the record a route is about (a bare `id` is one of these). */
  idPrefix: string | undefined;
}

const ANSWER: Context = { request: false, idPrefix: undefined };

const isNullable = (s: Schema) =>
  [s.anyOf, s.oneOf].some((b) => Array.isArray(b) && b.some((x: Schema) => x.type === 'null'));

/** An example value of `schema` (`name`: the property it is the value of). */
export function exampleOf(schema: unknown, name = '', depth = 0, ctx: Context = ANSWER): unknown {
  if (typeof schema !== 'object' || schema === null || depth > 8) return null;
  const s = schema as Schema;
  if (Array.isArray(s.examples) && s.examples.length > 0) return s.examples[0];
  if (s.const !== undefined) return s.const;
  if (Array.isArray(s.enum) && s.enum.length > 0) return s.enum[0];
  if (s.default !== undefined) return s.default;
  if (!ctx.request && NULL_IN_ANSWERS.has(name) && isNullable(s)) return null;
  for (const key of ['anyOf', 'oneOf'] as const) {
    const branches = s[key];
    if (Array.isArray(branches)) {
      const first = branches.find((b: Schema) => b.type !== 'null') ?? branches[0];
      return exampleOf(first, name, depth + 1, ctx);
    }
  }
  const type = Array.isArray(s.type) ? s.type.find((t) => t !== 'null') : s.type;
  switch (type) {
    case 'object': {
      const out: Record<string, unknown> = {};
      const required = new Set(Array.isArray(s.required) ? s.required : []);
      for (const [key, value] of Object.entries((s.properties ?? {}) as Record<string, unknown>)) {
        // An answer's optional `error` is there only when something failed (a bulk item).
        if (!ctx.request && key === 'error' && !required.has(key)) continue;
        out[key] = exampleOf(value, key, depth + 1, ctx);
      }
      return out;
    }
    case 'array':
      return s.maxItems === 0 ? [] : [exampleOf(s.items, name, depth + 1, ctx)];
    case 'integer':
    case 'number':
      if (NUMBER_BY_NAME[name] !== undefined) return NUMBER_BY_NAME[name];
      return typeof s.minimum === 'number' && s.minimum > 1 ? s.minimum : 1;
    case 'boolean':
      return true;
    case 'string':
      return stringOf(s, name, ctx);
    default:
      return null;
  }
}

function stringOf(s: Schema, name: string, ctx: Context): string {
  if (s.format === 'date-time') return ctx.request || FUTURE_NAMES.has(name) ? EXAMPLE_FUTURE : EXAMPLE_TIME;
  if (s.format === 'email') return BY_NAME.email!;
  if (s.format === 'uri') return BY_NAME.url!;
  if (BY_NAME[name]) return BY_NAME[name];
  if (name === 'id') return exampleId(ctx.idPrefix ?? 'stf');
  if (name.endsWith('Id') || name === 'assignee') return exampleId(prefixOf(name) ?? 'stf');
  return typeof s.minLength === 'number' && s.minLength > 8 ? 'x'.repeat(s.minLength) : 'text';
}

/**
 * `schema` with an example, unless it has its own (`request`: of what a caller sends to the route
 * at `url`, else of an answer).
 */
export function withExample(schema: unknown, request: boolean, url = ''): unknown {
  if (typeof schema !== 'object' || schema === null) return schema;
  const ctx: Context = { request, idPrefix: recordPrefix(url) };
  const s = schema as Schema;
  // A body or answer declared per media type (a form, a raw e-mail, text): each type's schema.
  if (typeof s.content === 'object' && s.content !== null) {
    const content = Object.fromEntries(
      Object.entries(s.content as Record<string, Schema>).map(([type, media]) => [
        type,
        // A request's media gets its example from the schema's; an answer's is used as written.
        {
          ...media,
          schema: withExample(media.schema, request, url),
          example: media.example ?? exampleOf(media.schema, '', 0, ctx),
        },
      ]),
    );
    return { ...s, content };
  }
  if (Array.isArray(s.examples) || s.type === 'null' || s.$ref !== undefined) return schema;
  return { ...s, examples: [exampleOf(s, '', 0, ctx)] };
}

/** The type of record the route at `url` is about: the collection its last `:param` belongs to. */
function recordPrefix(url: string): string | undefined {
  const segments = url.split('/').filter((p) => p !== '' && p !== 'api' && p !== 'v1');
  for (let i = segments.length - 1; i >= 0; i--) {
    const seg = segments[i]!;
    if (seg.startsWith(':')) continue;
    const prefix = prefixOf(seg);
    if (prefix !== undefined) return prefix;
  }
  return undefined;
}

/**
 * Path parameters with the example id of the record each names: `:id` one of the collection before
 * it, `:messageId` a message's. The replay of the examples puts a real record's id in its place.
 */
export function withPathExamples(params: unknown, url: string): unknown {
  const s = params as Schema;
  if (typeof s?.properties !== 'object' || s.properties === null) return params;
  const properties = Object.fromEntries(
    Object.entries(s.properties as Record<string, Schema>).map(([name, p]) => {
      if (Array.isArray(p.examples)) return [name, p];
      const before = url.split(`/:${name}`)[0] ?? '';
      const prefix = name === 'id' ? recordPrefix(before) : prefixOf(name);
      return [name, prefix === undefined ? p : { ...p, examples: [exampleId(prefix)] }];
    }),
  );
  return { ...s, properties };
}

/** The document as served on `now`'s day: each future placeholder a week ahead, at 09:00 UTC. */
export function servedDocument(doc: unknown, now = Date.now()): string {
  const day = new Date(now + 7 * 86_400_000);
  day.setUTCHours(9, 0, 0, 0);
  return JSON.stringify(doc).replaceAll(EXAMPLE_FUTURE, day.toISOString());
}

type Operation = { operationId?: string; responses?: Record<string, { links?: unknown }> };
type Document = { paths?: Record<string, Record<string, Operation>> };

/**
 * Adds `links` to every create's 201: to the get, update, replace and delete operations of the
 * same resource that exist, with the created record's id from the answer.
 */
export function linkCreates<T>(doc: T): T {
  const d = doc as Document;
  const ids = new Set<string>();
  for (const item of Object.values(d.paths ?? {}))
    for (const op of Object.values(item)) if (op.operationId) ids.add(op.operationId);
  for (const item of Object.values(d.paths ?? {})) {
    for (const op of Object.values(item)) {
      const m = /^create([A-Z]\w*)$/.exec(op.operationId ?? '');
      const created = op.responses?.['201'];
      if (m === null || created === undefined) continue;
      const links: Record<string, unknown> = {};
      for (const verb of ['get', 'update', 'replace', 'delete']) {
        const target = `${verb}${m[1]}`;
        if (!ids.has(target)) continue;
        links[target] = {
          operationId: target,
          parameters: { id: '$response.body#/data/id' },
          description: `${verb[0]!.toUpperCase()}${verb.slice(1)} the ${m[1]} just created`,
        };
      }
      if (Object.keys(links).length > 0) created.links = links;
    }
  }
  return doc;
}
