// Turns a route's own JSON Schema (as the OpenAPI document publishes it) into fast-check
// arbitraries of valid values, and lists the ways a valid value can be made invalid against it.
// Covers what the API's schemas use: objects (required, additionalProperties: false,
// minProperties), arrays (min/maxItems, uniqueItems), strings (min/maxLength, pattern, enum,
// formats email and date-time), integers with bounds, booleans, nullable unions and any JSON.
import fc from 'fast-check';
import { NUL_FREE } from '../../src/lib/openapi-limits.js';

// biome-ignore lint/suspicious/noExplicitAny: JSON Schema documents are read as plain JSON.
export type Schema = Record<string, any>;

/** Field name → arbitrary of values a business rule accepts (an existing guest id, a department …). */
export type Overrides = Record<string, fc.Arbitrary<unknown>>;

/** Strings are kept short unless the schema needs them long: size is fuzzed by the mutations. */
const STRING_CAP = 40;

const EMAIL = fc.stringMatching(/^[a-z0-9]{1,16}(\.[a-z0-9]{1,8})?@[a-z0-9]{1,12}\.(test|example|com|pt)$/);
const DATE_TIME = fc
  .date({ min: new Date('1970-01-01T00:00:00Z'), max: new Date('9999-12-31T23:59:59Z'), noInvalidDate: true })
  .chain((d) =>
    fc.constantFrom(
      d.toISOString(),
      d.toISOString().replace(/\.\d{3}Z$/, 'Z'),
      // The same instant written with an offset, when that stays within four-digit years.
      d.getUTCFullYear() < 9999 && d.getUTCFullYear() > 1970
        ? new Date(d.getTime() + 2 * 3600_000).toISOString().replace('Z', '+02:00')
        : d.toISOString(),
    ),
  );

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
/** No U+0000 (refused everywhere, see src/plugins/input.ts) and no lone surrogates. */
const clean = (s: string) => !s.includes('\u0000') && !LONE_SURROGATE.test(s);

const isNull = (s: Schema) => s.type === 'null' || (Array.isArray(s.enum) && s.enum.length === 1 && s.enum[0] === null);
/**
 * A union of shapes has no `type` of its own; `anyOf`/`oneOf` beside a `type` states a rule across
 * the fields of that one shape (exactly one of two fields), not another shape.
 */
const union = (s: Schema) => s.type === undefined && (Array.isArray(s.anyOf) || Array.isArray(s.oneOf));
export const nullable = (s: Schema) => union(s) && Array.isArray(s.anyOf) && s.anyOf.some(isNull);
const nonNull = (s: Schema): Schema =>
  union(s) && Array.isArray(s.anyOf) ? (s.anyOf.find((b: Schema) => !isNull(b)) ?? s) : s;

function stringArb(s: Schema): fc.Arbitrary<string> {
  const min = s.minLength ?? 0;
  const max = s.maxLength ?? Math.max(min, STRING_CAP);
  const fits = (v: string) => [...v].length >= min && [...v].length <= max && clean(v);
  if (s.format === 'email') return EMAIL.filter(fits);
  if (s.format === 'date-time') return DATE_TIME.filter(fits);
  // Every request string carries the NUL-free pattern (src/lib/openapi-limits.ts): `clean` keeps to it.
  if (typeof s.pattern === 'string' && s.pattern !== NUL_FREE)
    return fc.stringMatching(new RegExp(s.pattern)).filter(fits);
  const cap = Math.min(max, Math.max(min, STRING_CAP));
  const tricky = [' ', "O'Brien", '%_\\', '😀', 'e\u0301', "'; --"].filter((v) => fits(v));
  return fc
    .oneof(
      { weight: 3, arbitrary: fc.string({ minLength: min, maxLength: cap }) },
      { weight: 2, arbitrary: fc.string({ unit: 'binary', minLength: min, maxLength: cap }) },
      ...(tricky.length > 0 ? [{ weight: 1, arbitrary: fc.constantFrom(...tricky) }] : []),
    )
    .filter(fits);
}

/** Any JSON, without NUL, lone surrogates or keys the JSON parser refuses as prototype poisoning. */
export const anyJson = fc.jsonValue({ maxDepth: 3 }).filter((v) => {
  const text = JSON.stringify(v);
  return !text.includes('\\u0000') && !LONE_SURROGATE.test(text) && !/__proto__|constructor/.test(text);
});

/** An arbitrary of values valid against `schema`. `overrides` replace named object properties. */
export function valid(schema: Schema, overrides: Overrides = {}): fc.Arbitrary<unknown> {
  const s = schema;
  if (s.const !== undefined) return fc.constant(s.const);
  if (Array.isArray(s.enum)) return fc.constantFrom(...s.enum);
  if (union(s)) {
    return fc.oneof(...(s.anyOf ?? s.oneOf).map((b: Schema) => valid(b, overrides)));
  }
  switch (s.type) {
    case 'null':
      return fc.constant(null);
    case 'boolean':
      return fc.boolean();
    case 'integer':
      return fc.integer({ min: s.minimum ?? -1_000_000, max: s.maximum ?? 1_000_000 });
    case 'number':
      return fc.double({
        min: s.minimum ?? s.exclusiveMinimum ?? -1e9,
        max: s.maximum ?? 1e9,
        minExcluded: s.minimum === undefined && s.exclusiveMinimum !== undefined,
        noNaN: true,
        noDefaultInfinity: true,
      });
    case 'string':
      return stringArb(s);
    case 'array': {
      const item = valid(s.items ?? {}, overrides);
      const minLength = s.minItems ?? 0;
      const maxLength = Math.min(s.maxItems ?? 5, Math.max(minLength, 5));
      return s.uniqueItems
        ? fc.uniqueArray(item, { minLength, maxLength, selector: (v) => JSON.stringify(v) })
        : fc.array(item, { minLength, maxLength });
    }
    case 'object': {
      const props = (s.properties ?? {}) as Record<string, Schema>;
      const required = new Set<string>(s.required ?? []);
      const model: Record<string, fc.Arbitrary<unknown>> = {};
      for (const [k, p] of Object.entries(props)) {
        // A name is overridden only where it names a value (the sla setting's `email` is a channel's targets).
        const o = nonNull(p).type === 'object' ? undefined : overrides[k];
        model[k] = o === undefined ? valid(p, overrides) : nullable(p) ? fc.option(o, { nil: null, freq: 4 }) : o;
      }
      const keys = Object.keys(props);
      const rec = fc.record(model, { requiredKeys: keys.filter((k) => required.has(k)) });
      const minProps = s.minProperties ?? 0;
      if (minProps === 0) return rec;
      // Enough optional keys to reach minProperties: pick them, then generate each.
      return rec.chain((base) => {
        if (Object.keys(base).length >= minProps) return fc.constant(base);
        const missing = keys.filter((k) => !(k in base));
        return fc
          .shuffledSubarray(missing, { minLength: minProps - Object.keys(base).length, maxLength: missing.length })
          .chain((extra) =>
            fc.record(Object.fromEntries(extra.map((k) => [k, model[k]!]))).map((more) => ({ ...base, ...more })),
          );
      });
    }
    default:
      return anyJson;
  }
}

export interface Mutation {
  /** Dotted path of the field made invalid ('' for the value itself). */
  field: string;
  what: string;
  value: unknown;
}

const get = (v: unknown, k: string) => (v as Record<string, unknown>)[k];

/**
 * Every single-point change that makes `value` (valid against `schema`) invalid against it:
 * an unknown property, a missing required one, a wrong type, a string too long or too short, a
 * value outside an enum, a number out of bounds, too many items. `asQuery`: values travel as
 * strings, so a string can only be made invalid by length, pattern or enum.
 */
export function mutations(schema: Schema, value: unknown, asQuery = false, path = ''): Mutation[] {
  const out: Mutation[] = [];
  const at = (what: string, v: unknown) => out.push({ field: path, what, value: v });
  const s = nonNull(schema);
  const canBeNull = nullable(schema) || s.type === 'null';
  if (value === null) {
    if (!canBeNull) return out;
  }
  if (Array.isArray(s.enum) || s.const !== undefined) {
    at('outside the enum', 'zz-not-allowed');
    if (!asQuery) at('wrong type', 12345);
    return out;
  }
  switch (s.type) {
    case 'string':
      if (!asQuery) at('wrong type', 12345);
      if (typeof s.maxLength === 'number' && s.maxLength < 60_000) at('too long', 'x'.repeat(s.maxLength + 1));
      if ((s.minLength ?? 0) > 0) at('too short', '');
      if (s.format === 'email') at('not an email', 'not-an-email');
      if (s.format === 'date-time') at('not a date-time', 'next tuesday');
      if (typeof s.pattern === 'string') {
        const pattern = new RegExp(s.pattern, 'u');
        at(
          'not matching the pattern',
          ['!! not valid !!', 'not\u0000valid'].find((v) => !pattern.test(v)),
        );
      }
      break;
    case 'integer':
      at('wrong type', asQuery ? 'abc' : '12');
      at('not an integer', 1.5);
      if (typeof s.minimum === 'number') at('below the minimum', s.minimum - 1);
      if (typeof s.maximum === 'number') at('above the maximum', s.maximum + 1);
      break;
    case 'number':
      at('wrong type', asQuery ? 'abc' : '12');
      break;
    case 'boolean':
      at('wrong type', asQuery ? 'maybe' : 'true');
      break;
    case 'array': {
      at('wrong type', asQuery ? undefined : { not: 'an array' });
      if (typeof s.maxItems === 'number' && s.maxItems <= 200 && Array.isArray(value) && value.length > 0) {
        at(
          'too many items',
          Array.from({ length: s.maxItems + 1 }, (_, i) => value[i % value.length]),
        );
      }
      if ((s.minItems ?? 0) > 0) at('too few items', []);
      if (Array.isArray(value)) {
        value.forEach((item, i) => {
          for (const m of mutations(s.items ?? {}, item, asQuery, path === '' ? String(i) : `${path}.${i}`)) {
            out.push({ ...m, value: value.map((x, j) => (j === i ? m.value : x)) });
          }
        });
      }
      break;
    }
    case 'object': {
      if (!asQuery) at('wrong type', ['not', 'an', 'object']);
      if (value === null || typeof value !== 'object') break;
      const obj = value as Record<string, unknown>;
      const child = (k: string) => (path === '' ? k : `${path}.${k}`);
      if (s.additionalProperties === false) {
        out.push({ field: child('zzUnknown'), what: 'unknown property', value: { ...obj, zzUnknown: 1 } });
      }
      for (const k of s.required ?? []) {
        if (k in obj) {
          const { [k]: _gone, ...rest } = obj;
          out.push({ field: child(k), what: 'missing required property', value: rest });
        }
      }
      if ((s.minProperties ?? 0) > 0 && Object.keys(obj).length > 0) {
        out.push({ field: path || 'body', what: 'too few properties', value: {} });
      }
      for (const [k, p] of Object.entries((s.properties ?? {}) as Record<string, Schema>)) {
        if (!(k in obj)) continue;
        for (const m of mutations(p, get(obj, k), asQuery, child(k))) {
          out.push({ ...m, value: { ...obj, [k]: m.value } });
        }
      }
      break;
    }
  }
  return out.filter((m) => m.value !== undefined);
}
