// Owns the examples and links of the OpenAPI document: an example value built from each request
// body's and success answer's own schema (a field's `examples`, else its enum, default or format,
// else a value named after the field), and `links` from each create to the get, update and delete
// of what it created, so a reader (and a generated client) sees how the calls chain.

type Schema = Record<string, unknown>;

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
  url: 'https://hooks.example.com/guest-messaging',
  secret: 'whsec_3kq8…',
  key: 'hotel',
  code: 'VALIDATION_ERROR',
  eventId: '1842',
  message: 'email: must match format "email"',
  nextCursor: 'WyIyMDI2LTExLTIyVDA2OjMzOjEyLjAwMFoiLCJjbnZfMDFqZDh4M2s1cTd3OWUycjR0Nnk4dTBpMW8iXQ.bm8tc2ln',
};

/** Id prefixes by field name (the record's own `id` carries its schema's example). */
const ID_PREFIX: Record<string, string> = {
  guestId: 'gst',
  conversationId: 'cnv',
  taskId: 'tsk',
  messageId: 'msg',
  webhookId: 'whk',
  deliveryId: 'whd',
};

const FORMATS: Record<string, string> = {
  'date-time': '2026-11-22T06:33:12.000Z',
  email: 'ana.lopes@example.com',
  uri: 'https://hooks.example.com/guest-messaging',
};

/** An example value of `schema` (`name`: the property it is the value of). */
export function exampleOf(schema: unknown, name = '', depth = 0): unknown {
  if (typeof schema !== 'object' || schema === null || depth > 8) return null;
  const s = schema as Schema;
  if (Array.isArray(s.examples) && s.examples.length > 0) return s.examples[0];
  if (s.const !== undefined) return s.const;
  if (Array.isArray(s.enum) && s.enum.length > 0) return s.enum[0];
  if (s.default !== undefined) return s.default;
  for (const key of ['anyOf', 'oneOf'] as const) {
    const branches = s[key];
    if (Array.isArray(branches)) {
      const first = branches.find((b: Schema) => b.type !== 'null') ?? branches[0];
      return exampleOf(first, name, depth + 1);
    }
  }
  const type = Array.isArray(s.type) ? s.type.find((t) => t !== 'null') : s.type;
  switch (type) {
    case 'object': {
      const out: Record<string, unknown> = {};
      for (const [key, value] of Object.entries((s.properties ?? {}) as Record<string, unknown>)) {
        out[key] = exampleOf(value, key, depth + 1);
      }
      return out;
    }
    case 'array':
      return s.maxItems === 0 ? [] : [exampleOf(s.items, name, depth + 1)];
    case 'integer':
    case 'number':
      return typeof s.minimum === 'number' && s.minimum > 1 ? s.minimum : 1;
    case 'boolean':
      return true;
    case 'string':
      if (typeof s.format === 'string' && FORMATS[s.format]) return FORMATS[s.format];
      if (BY_NAME[name]) return BY_NAME[name];
      if (name.endsWith('Id') || name === 'id' || name === 'assignee')
        return `${ID_PREFIX[name] ?? 'stf'}_01jd8x3k5q7w9e2r4t6y8v0m1n`;
      return typeof s.minLength === 'number' && s.minLength > 8 ? 'x'.repeat(s.minLength) : 'text';
    default:
      return null;
  }
}

/** `schema` with an example, unless it has its own. */
export function withExample(schema: unknown): unknown {
  if (typeof schema !== 'object' || schema === null) return schema;
  const s = schema as Schema;
  // A body or answer declared per media type (a form, a raw e-mail, text): each type's schema.
  if (typeof s.content === 'object' && s.content !== null) {
    const content = Object.fromEntries(
      Object.entries(s.content as Record<string, Schema>).map(([type, media]) => [
        type,
        // A request's media gets its example from the schema's; an answer's is used as written.
        { ...media, schema: withExample(media.schema), example: media.example ?? exampleOf(media.schema) },
      ]),
    );
    return { ...s, content };
  }
  if (Array.isArray(s.examples) || s.type === 'null' || s.$ref !== undefined) return schema;
  return { ...s, examples: [exampleOf(s)] };
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
