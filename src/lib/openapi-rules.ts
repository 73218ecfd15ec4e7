// Owns the cross-field rules the document states but route schemas leave to the code: a message's
// content or template by its type, exactly one of two fields, what an answer's fields imply of
// each other. Written beside a schema as `...documented({ if, then, else })`, they are that
// schema's keywords in the served document only. The server checks a request's rules in its
// services, in words a person reads (a route schema holding them would answer `must match "then"
// schema`), and an answer's serializer would test every record against them; the test suite
// holds every answer it receives to them (test/response-validation.ts).

type Schema = Record<string, unknown>;

const DOCUMENTED = 'x-documented';

/** Keywords a schema has in the document only (spread into a TypeBox schema's options). */
export const documented = (keywords: Schema): Schema => ({ [DOCUMENTED]: keywords });

/**
 * A rule in the document only, as JSON Schema's if/then/else: a value for which `when` holds must
 * satisfy `must`, any other `otherwise` (when given); `description` says it in words.
 */
export function documentedRule(description: string | null, when: Schema, must: Schema, otherwise?: Schema): Schema {
  return documented({
    ...(description === null ? {} : { description }),
    if: open(when),
    // biome-ignore lint/suspicious/noThenProperty: JSON Schema's keyword, in a schema, never awaited.
    then: open(must),
    ...(otherwise === undefined ? {} : { else: open(otherwise) }),
  });
}

/**
 * A rule's branch saying outright what JSON Schema means anyway: it constrains only the fields it
 * names (`unevaluatedProperties: true`), and a field it requires is a field (`properties`). A
 * linter reading every object as closed and every required name as declared (Redocly) would
 * otherwise refuse every example and flag every rule.
 */
function open(branch: Schema): Schema {
  const properties: Record<string, unknown> = {};
  for (const [name, sub] of Object.entries((branch.properties ?? {}) as Record<string, Schema>)) {
    properties[name] = typeof sub.properties === 'object' ? open(sub) : sub;
  }
  for (const name of (branch.required ?? []) as string[]) properties[name] ??= true;
  const out: Schema = { ...branch, unevaluatedProperties: true };
  if (Object.keys(properties).length > 0) out.properties = properties;
  if (typeof branch.not === 'object' && branch.not !== null) out.not = open(branch.not as Schema);
  return out;
}

/** A copy of `doc` with each schema's documented keywords in place (the route schemas are untouched). */
export function withDocumentedRules<T>(doc: T): T {
  const walk = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(walk);
    if (typeof v !== 'object' || v === null) return v;
    const out: Schema = {};
    for (const [k, x] of Object.entries(v)) if (k !== DOCUMENTED) out[k] = walk(x);
    const rules = (v as Schema)[DOCUMENTED];
    if (typeof rules === 'object' && rules !== null) Object.assign(out, walk(rules));
    return out;
  };
  return walk(doc) as T;
}
