// Owns request validation: the Ajv instances (bodies strict: no coercion, no dropped fields;
// query and params coerced from strings), and turning Ajv errors into { field, message } details.
import { Ajv, type Options as AjvOptions } from 'ajv';
import addFormats from 'ajv-formats';
import type { TSchema } from 'typebox';
import { type FieldError, validation } from './errors.js';
import { EMAIL_PATTERN } from './openapi-limits.js';
import { ERROR_BODIES, ErrorBody } from './schemas.js';

function makeAjv(part: 'body' | 'other'): Ajv {
  const options: AjvOptions = {
    allErrors: true,
    coerceTypes: part === 'body' ? false : 'array',
    removeAdditional: false,
    useDefaults: true,
    strict: false,
    // Errors carry their schema, so a pattern can say in words what it wants (`x-pattern-message`).
    verbose: true,
    // The schemas are TypeBox's output, and the OpenAPI document built from them is linted in CI
    // (npm run lint:openapi). Checking each against the JSON Schema meta-schema at run time
    // compiled that meta-schema in every process, most of what making an Ajv cost, for every test
    // file's process as for the server.
    validateSchema: false,
  };
  const ajv = new Ajv(options);
  addFormats.default(ajv);
  // The documented pattern, lengths included, is the rule (ajv-formats' own has no lengths).
  ajv.addFormat('email', new RegExp(EMAIL_PATTERN, 'u'));
  ajv.addSchema(ErrorBody);
  for (const body of ERROR_BODIES) ajv.addSchema(body);
  return ajv;
}

/** One Ajv per part for the process: route validators (compiled-schemas.ts) and checkers share them. */
export const AJV = { body: makeAjv('body'), other: makeAjv('other') };
const bodyAjv = AJV.body;

/**
 * Compiles a body schema into a checker that throws VALIDATION_ERROR with fields under `prefix`
 * (used where one request carries several bodies: bulk items, setting values); '' for none.
 */
export function bodyChecker<T>(schema: TSchema, prefix: string): (value: unknown) => T {
  const validate = bodyAjv.compile(schema as object);
  return (value) => {
    if (validate(value)) return value as T;
    const details = validationDetails(prefix || undefined, validate.errors ?? []).map((d) =>
      prefix === '' || d.field === prefix ? d : { ...d, field: `${prefix}.${d.field}` },
    );
    throw validation(details, `${details[0]!.field}: ${details[0]!.message}`);
  };
}

export interface AjvLikeError {
  instancePath?: string;
  schemaPath?: string;
  keyword?: string;
  message?: string;
  params?: Record<string, unknown>;
  parentSchema?: Record<string, unknown>;
}

function fieldPath(context: string | undefined, e: AjvLikeError): string {
  const base = (e.instancePath ?? '')
    .split('/')
    .filter((s) => s !== '')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
  const p = e.params ?? {};
  if (e.keyword === 'required' && typeof p.missingProperty === 'string') base.push(p.missingProperty);
  if (e.keyword === 'additionalProperties' && typeof p.additionalProperty === 'string') base.push(p.additionalProperty);
  const path = base.join('.');
  if (path !== '') return path;
  return context === 'body' || context === undefined ? 'body' : context;
}

/** What a value of each format looks like, for a person reading the error. */
const FORMAT_MESSAGES: Record<string, string> = {
  email: 'must be an e-mail address like ana@example.com',
  'date-time': 'must be a date and time like 2026-12-01T14:30:00Z (ISO 8601, with a time zone)',
};

function fieldMessage(e: AjvLikeError): string {
  if (e.keyword === 'additionalProperties') return 'is not an allowed field';
  if (e.keyword === 'required') return 'is required';
  if (e.keyword === 'enum' && Array.isArray(e.params?.allowedValues)) {
    return `must be one of: ${(e.params.allowedValues as unknown[]).join(', ')}`;
  }
  const said = e.parentSchema?.['x-pattern-message'];
  if (e.keyword === 'pattern') return typeof said === 'string' ? said : 'is not in the expected form';
  if (e.keyword === 'format' && typeof e.params?.format === 'string') {
    return FORMAT_MESSAGES[e.params.format] ?? `must be a valid ${e.params.format}`;
  }
  if (e.keyword === 'const' && e.params?.allowedValue !== undefined) return `must be ${String(e.params.allowedValue)}`;
  return e.message ?? 'is invalid';
}

/**
 * A rule across fields that a schema states as `anyOf` / `oneOf` branches (exactly one of two
 * fields, at least one of three) carries `x-rule-message`, and `x-rule-field` when it is best
 * said of one field: its failure is said once, in those words, instead of each branch's.
 */
function ruleOf(context: string | undefined, e: AjvLikeError): FieldError | null {
  const message = e.parentSchema?.['x-rule-message'];
  if ((e.keyword !== 'anyOf' && e.keyword !== 'oneOf') || typeof message !== 'string') return null;
  const named = e.parentSchema?.['x-rule-field'];
  if (typeof named !== 'string') return { field: fieldPath(context, e), message };
  const at = fieldPath(context, { instancePath: e.instancePath ?? '' });
  return { field: at === (context ?? 'body') ? named : `${at}.${named}`, message };
}

export function validationDetails(context: string | undefined, errors: AjvLikeError[]): FieldError[] {
  const out: FieldError[] = [];
  const byKey = new Map<string, FieldError>();
  // A nullable field fails two `type` checks ("must be string", "must be null"): say it once.
  const types = new Map<string, string[]>();
  const rules = errors.filter((e) => ruleOf(context, e) !== null);
  for (const e of errors) {
    const rule = ruleOf(context, e);
    if (rule !== null) {
      const k = `${rule.field}\u0000${rule.message}`;
      if (!byKey.has(k)) {
        byKey.set(k, rule);
        out.push(rule);
      }
      continue;
    }
    // The branches of a stated rule are said by the rule.
    if (rules.some((r) => e.schemaPath?.startsWith(`${r.schemaPath}/`))) continue;
    // A union reports every branch; the "anyOf" summary adds nothing a client can act on.
    if (e.keyword === 'anyOf' || e.keyword === 'oneOf' || e.keyword === 'if') continue;
    const field = fieldPath(context, e);
    if (e.keyword === 'type' && typeof e.params?.type === 'string') {
      const list = types.get(field) ?? [];
      list.push(e.params.type);
      types.set(field, list);
      const d = byKey.get(`${field}\u0000type`) ?? { field, message: '' };
      d.message = `must be ${list.join(' or ')}`;
      if (!byKey.has(`${field}\u0000type`)) {
        byKey.set(`${field}\u0000type`, d);
        out.push(d);
      }
      continue;
    }
    const d = { field, message: fieldMessage(e) };
    const k = `${d.field}\u0000${d.message}`;
    if (!byKey.has(k)) {
      byKey.set(k, d);
      out.push(d);
    }
  }
  // A value that failed a format, pattern or length check had a type one branch accepts: a
  // nullable field's "must be null" from the other branch is then noise ({"email":"bad"}).
  const checked = new Set(
    out
      .filter((d) => !byKey.has(`${d.field}\u0000type`) || byKey.get(`${d.field}\u0000type`) !== d)
      .map((d) => d.field),
  );
  const kept = out.filter((d) => !(checked.has(d.field) && byKey.get(`${d.field}\u0000type`) === d));
  return kept.length > 0 ? kept : [{ field: context ?? 'body', message: 'is invalid' }];
}

/** The deepest nesting of arrays and objects a request may carry. */
export const MAX_JSON_DEPTH = 64;

/**
 * The first problem no schema can express in a parsed request part, or null:
 * - a string or key holding U+0000, which PostgreSQL text and jsonb cannot store (refused on
 *   every store so both answer alike);
 * - nesting deeper than MAX_JSON_DEPTH, which would overflow the stack of every recursive step
 *   after parsing (serialising, size checks) and answer 500.
 * Iterative, with each path a link to its parent, so any body costs time linear in its size.
 * `root` names the part itself ('body', 'query', 'params').
 */
export function inputProblem(value: unknown, root: string): FieldError | null {
  type Link = { key: string; parent: Link | null } | null;
  const name = (link: Link) => {
    const keys: string[] = [];
    for (let l = link; l !== null; l = l.parent) keys.push(l.key);
    return keys.length === 0 ? root : keys.reverse().join('.');
  };
  const nul = (link: Link): FieldError => ({
    field: name(link),
    message: 'must not contain the NUL character (U+0000)',
  });
  const stack: [unknown, Link, number][] = [[value, null, 0]];
  while (stack.length > 0) {
    const [v, link, depth] = stack.pop()!;
    if (typeof v === 'string') {
      if (v.includes('\u0000')) return nul(link);
      continue;
    }
    if (typeof v !== 'object' || v === null) continue;
    if (depth >= MAX_JSON_DEPTH) {
      return { field: name(link), message: `must not nest arrays and objects more than ${MAX_JSON_DEPTH} deep` };
    }
    if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push([v[i], { key: String(i), parent: link }, depth + 1]);
    } else {
      for (const [k, child] of Object.entries(v)) {
        if (k.includes('\u0000')) return nul({ key: k.replaceAll('\u0000', '\\u0000'), parent: link });
        stack.push([child, { key: k, parent: link }, depth + 1]);
      }
    }
  }
  return null;
}
