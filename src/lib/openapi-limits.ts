// Owns how the OpenAPI document states the input limits the server enforces outside a route's own
// schema, so a client or fuzzer generated from the document sends only what the server takes:
// - U+0000 is refused in every string and object key of a request (src/plugins/input.ts): every
//   request string gets a pattern that excludes it, every open object a `propertyNames` pattern;
// - `format: email` is checked by ajv-formats' "full" e-mail rule, stricter than the format's
//   definition (no quoted local parts, no IP literals, a dot in the domain): it is written out as
//   the pattern it is;
// - any JSON a request may carry (a custom setting's value) is `JsonInput`, whose strings and keys
//   are NUL-free too.
// Done here, once, on the document rather than in each route schema: the rules are enforced once,
// and a string added later is documented without anyone having to remember it.

type Schema = Record<string, unknown>;

/** Any string without U+0000. */
export const NUL_FREE = '^[^\\u0000]*$';

/**
 * The `email` format as request validation runs it (src/lib/validation.ts uses this pattern): the
 * syntax of ajv-formats' full `email` rule, its `i` flag spelled out as A-Z next to a-z, held to
 * RFC 5321's lengths (§4.5.3.1: a local part of at most 64 octets, a domain label of at most 63, an
 * address of at most 254), so no address is stored that no mail system would take.
 */
export const EMAIL_PATTERN =
  '^(?=[^@]{1,64}@)(?=.{3,254}$)' +
  "[a-zA-Z0-9!#$%&'*+/=?^_`{|}~-]+(?:\\.[a-zA-Z0-9!#$%&'*+/=?^_`{|}~-]+)*" +
  '@(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?\\.)+[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?$';

/** What each pattern above wants, in words (`x-pattern-message`, as every request pattern has). */
export const NUL_FREE_MESSAGE = 'must not hold the NUL character (U+0000)';
export const EMAIL_MESSAGE = 'must be an e-mail address like ana@example.com';

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });

/** Bounds of any JSON a request may carry: the body limit (1 MiB) and the nesting limit. */
const jsonValue = (name: string, description: string, strings: Schema): Schema => ({
  description,
  anyOf: [
    { type: 'string', maxLength: 1_048_576, ...strings },
    { type: 'number' },
    { type: 'boolean' },
    { type: 'null' },
    { type: 'array', maxItems: 1_048_576, items: ref(name) },
    {
      type: 'object',
      maxProperties: 1_048_576,
      additionalProperties: ref(name),
      ...(strings.pattern === undefined
        ? {}
        : {
            propertyNames: {
              pattern: strings.pattern,
              'x-pattern-message': strings['x-pattern-message'],
              maxLength: 1_048_576,
            },
          }),
    },
  ],
});

/** Components the document gains: any JSON, as answered and as accepted. */
export const JSON_COMPONENTS: Record<string, Schema> = {
  JsonValue: jsonValue('JsonValue', 'Any JSON value', {}),
  JsonInput: jsonValue('JsonInput', 'Any JSON value without U+0000 in a string or key (64 levels at most)', {
    pattern: NUL_FREE,
    'x-pattern-message': NUL_FREE_MESSAGE,
  }),
};

const isEmpty = (s: Schema) =>
  Object.keys(s).every((k) => k === 'description' || k === 'examples' || k === 'example' || k === 'title');

const mapValues = (m: unknown, f: (v: unknown) => unknown) =>
  typeof m === 'object' && m !== null ? Object.fromEntries(Object.entries(m).map(([k, v]) => [k, f(v)])) : m;

/** Keywords whose value is a schema, an array of schemas, or a map of name → schema. */
const ONE = ['items', 'additionalProperties', 'not', 'propertyNames', 'contains', 'if', 'then', 'else', 'schema'];
const MANY = ['anyOf', 'oneOf', 'allOf', 'prefixItems'];
const MAPS = ['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas', 'content'];

/** A request part's schema with the limits above stated in it (a copy; the route's own is untouched). */
export function withInputLimits(schema: unknown): unknown {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) return schema;
  const s = schema as Schema;
  if (isEmpty(s)) return { ...s, ...ref('JsonInput') };
  const out: Schema = { ...s };
  for (const k of ONE) if (typeof s[k] === 'object') out[k] = withInputLimits(s[k]);
  for (const k of MANY) if (Array.isArray(s[k])) out[k] = (s[k] as unknown[]).map(withInputLimits);
  for (const k of MAPS) if (s[k] !== undefined) out[k] = mapValues(s[k], withInputLimits);
  if (out.type === 'string' && out.pattern === undefined && out.enum === undefined && out.const === undefined) {
    out.pattern = out.format === 'email' ? EMAIL_PATTERN : NUL_FREE;
    out['x-pattern-message'] = out.format === 'email' ? EMAIL_MESSAGE : NUL_FREE_MESSAGE;
  }
  if (out.type === 'object' && out.additionalProperties !== false && out.propertyNames === undefined) {
    out.propertyNames = { pattern: NUL_FREE, 'x-pattern-message': NUL_FREE_MESSAGE };
  }
  return out;
}

/**
 * `base` (an object schema) as a oneOf of one branch per value of its `tag` property, each branch
 * saying which shape `field` has then: a generated client narrows `field` by checking `tag`.
 */
export function discriminated(base: Schema, tag: string, field: string, branches: [Schema, Schema][]): Schema {
  const { properties, required, type: _type, additionalProperties: _extra, ...rest } = base;
  return {
    ...rest,
    oneOf: branches.map(([tagSchema, fieldSchema]) => ({
      type: 'object',
      properties: { ...(properties as Schema), [tag]: tagSchema, [field]: fieldSchema },
      required,
    })),
  };
}

/** The `$ref` to a component of the document. */
export const componentRef = ref;
