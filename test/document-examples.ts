// Finds every example in a served OpenAPI document with the schema it must satisfy (a parameter's,
// a request body's or an answer's media example, and a schema's own `examples`), and checks each
// with Ajv (JSON Schema 2020-12, the dialect of OpenAPI 3.1) over the document itself, so a `$ref`
// resolves to the schema the document names.
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

// biome-ignore lint/suspicious/noExplicitAny: the served OpenAPI document, read as JSON.
export type Doc = any;
type Schema = Record<string, unknown>;

export const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'options', 'head', 'trace'] as const;

export interface Example {
  /** Where a reader finds it, e.g. "POST /api/v1/guests request application/json". */
  where: string;
  /** JSON pointer (unencoded parts) of the schema it must satisfy. */
  schema: string[];
  value: unknown;
  /** An example of what a caller sends (a parameter or request body), not of an answer. */
  request: boolean;
}

/** The values of a media or parameter object's `example` and named `examples`. */
function valuesOf(holder: Schema): unknown[] {
  const out: unknown[] = [];
  if ('example' in holder) out.push(holder.example);
  for (const named of Object.values((holder.examples ?? {}) as Record<string, { value?: unknown }>)) {
    if (typeof named === 'object' && named !== null && 'value' in named) out.push(named.value);
  }
  return out;
}

/** Subschemas of `schema` by the keyword path that reaches them. */
function* subschemas(schema: unknown, at: string[]): Generator<[Schema, string[]]> {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) return;
  const s = schema as Schema;
  yield [s, at];
  for (const key of ['items', 'additionalProperties', 'not', 'if', 'then', 'else', 'contains']) {
    if (typeof s[key] === 'object') yield* subschemas(s[key], [...at, key]);
  }
  for (const key of ['properties', 'patternProperties']) {
    for (const [name, sub] of Object.entries((s[key] ?? {}) as Record<string, unknown>)) {
      yield* subschemas(sub, [...at, key, name]);
    }
  }
  for (const key of ['anyOf', 'oneOf', 'allOf', 'prefixItems']) {
    if (Array.isArray(s[key]))
      for (const [i, sub] of (s[key] as unknown[]).entries()) yield* subschemas(sub, [...at, key, String(i)]);
  }
}

/** Every example in the document, in document order, with the schema it must satisfy. */
export function examplesOf(doc: Doc): Example[] {
  const out: Example[] = [];
  const schemas: [unknown, string[], string][] = [];
  const media = (content: Record<string, Schema> | undefined, at: string[], where: string, request: boolean) => {
    for (const [type, m] of Object.entries(content ?? {})) {
      const schema = [...at, 'content', type, 'schema'];
      for (const value of valuesOf(m)) out.push({ where: `${where} ${type}`, schema, value, request });
      schemas.push([m.schema, schema, `${where} ${type}`]);
    }
  };
  for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, Schema>>)) {
    for (const method of METHODS) {
      const op = item[method];
      if (op === undefined) continue;
      const name = `${method.toUpperCase()} ${path}`;
      const at = ['paths', path, method];
      for (const [i, p] of ((op.parameters ?? []) as Schema[]).entries()) {
        const schema = [...at, 'parameters', String(i), 'schema'];
        const where = `${name} ${p.in} parameter ${p.name}`;
        for (const value of valuesOf(p)) out.push({ where, schema, value, request: true });
        schemas.push([p.schema, schema, where]);
      }
      const body = op.requestBody as Schema | undefined;
      media(body?.content as Record<string, Schema> | undefined, [...at, 'requestBody'], `${name} request`, true);
      for (const [status, res] of Object.entries((op.responses ?? {}) as Record<string, Schema>)) {
        media(
          res.content as Record<string, Schema> | undefined,
          [...at, 'responses', status],
          `${name} ${status}`,
          false,
        );
      }
    }
  }
  for (const [name, schema] of Object.entries((doc.components?.schemas ?? {}) as Record<string, unknown>)) {
    schemas.push([schema, ['components', 'schemas', name], `components.schemas.${name}`]);
  }
  for (const [root, at, where] of schemas) {
    for (const [s, path] of subschemas(root, at)) {
      if (!Array.isArray(s.examples)) continue;
      const field = path.slice(at.length).join('.');
      for (const value of s.examples)
        out.push({ where: `${where} schema ${field || '(root)'}`, schema: path, value, request: false });
    }
  }
  return out;
}

/** A checker of values against schemas of `doc` by pointer: the errors, none when valid. */
export function schemaChecker(doc: Doc): (schema: string[], value: unknown) => string[] {
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false, logger: false });
  addFormats.default(ajv);
  const int = (bits: number) => (n: number) => Number.isInteger(n) && Math.abs(n) <= 2 ** (bits - 1);
  ajv.addFormat('int32', { type: 'number', validate: int(32) });
  ajv.addFormat('int64', { type: 'number', validate: int(64) });
  ajv.addSchema(doc, 'urn:gma:openapi');
  const pointer = (parts: string[]) =>
    parts.map((p) => encodeURIComponent(p.replaceAll('~', '~0').replaceAll('/', '~1'))).join('/');
  // Many pointers hold the same schema (every id, every error envelope): each is compiled once, its
  // `$ref`s being to the one document either way.
  const byContent = new Map<string, ReturnType<typeof ajv.getSchema>>();
  return (schema, value) => {
    const at = schema.reduce<unknown>((node, part) => (node as Record<string, unknown> | undefined)?.[part], doc);
    const key = JSON.stringify(at);
    if (!byContent.has(key)) byContent.set(key, ajv.getSchema(`urn:gma:openapi#/${pointer(schema)}`));
    const validate = byContent.get(key);
    if (validate === undefined) return [`no schema at /${schema.join('/')}`];
    if (validate(value)) return [];
    return (validate.errors ?? []).map((e) => `${e.instancePath || '(root)'} ${e.message ?? e.keyword}`);
  };
}
