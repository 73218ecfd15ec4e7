// Every response the HTTP suite receives through `call()` is checked against the OpenAPI document
// the same app serves (docs/reliability.md): its status must be documented for the operation, its media type
// too, and a JSON body must validate against the documented schema. Validation is done by
// @hyperjump/json-schema's OpenAPI 3.1 dialect, not by anything written here; this file only finds
// the operation a request reached. RESPONSE_VALIDATION=0 turns it off (a quick local run).
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { restoreValidator, validate } from '@hyperjump/json-schema/openapi-3-1';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';

const ENABLED = process.env.RESPONSE_VALIDATION !== '0';

type Validator = Awaited<ReturnType<typeof validate>>;
/** Validates one answer's body (BASIC output). */
type Check = (value: unknown) => Promise<ReturnType<Validator>>;
// biome-ignore lint/suspicious/noExplicitAny: the served OpenAPI document, read as JSON.
type Doc = any;

interface Route {
  template: string;
  pattern: RegExp;
  params: number;
}

interface Document {
  doc: Doc;
  /** The document's content hash: compiled validators are shared between processes under it. */
  hash: string;
  base: string;
  routes: Route[];
  /** By the content of the schema they validate. */
  validators: Map<string, Promise<Check>>;
}

const DIR = join(tmpdir(), 'gma-response-validation');
const byApp = new WeakMap<FastifyInstance, Document>();
const byHash = new Map<string, Document>();

const pointer = (...parts: string[]) =>
  parts.map((p) => encodeURIComponent(p.replaceAll('~', '~0').replaceAll('/', '~1'))).join('/');

/**
 * The served document, written once per distinct content as a file the validator can load. Making
 * it costs ~0.1 s of CPU and a test process builds dozens of apps with the same routes, whose
 * schemas are the code's own: an app with the same route table gets the document made before.
 */
const byRoutes = new Map<string, Document>();
function documentOf(app: FastifyInstance): Document {
  const kept = byApp.get(app);
  if (kept) return kept;
  const table = app.printRoutes({ commonPrefix: false, includeHooks: false });
  const same = byRoutes.get(table);
  if (same !== undefined) {
    byApp.set(app, same);
    return same;
  }
  const doc = app.swagger() as Doc;
  const text = JSON.stringify(doc);
  const hash = createHash('sha256').update(text).digest('hex').slice(0, 16);
  let d = byHash.get(hash);
  if (d === undefined) {
    mkdirSync(DIR, { recursive: true });
    // The `.openapi.json` suffix tells the validator the file is an OpenAPI document.
    // One file per process: test files run in parallel processes, and one must never read another's
    // half-written copy.
    const file = join(DIR, `${hash}-${process.pid}.openapi.json`);
    writeFileSync(file, text);
    process.once('exit', () => rmSync(file, { force: true }));
    const routes = Object.keys(doc.paths ?? {})
      .map((template) => ({
        template,
        pattern: new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}$`),
        params: (template.match(/\{/g) ?? []).length,
      }))
      // A literal segment wins over a parameter (/conversations/bulk before /conversations/{id}).
      .sort((a, b) => a.params - b.params);
    d = { doc, hash, base: pathToFileURL(file).href, routes, validators: new Map() };
    byHash.set(hash, d);
  }
  byApp.set(app, d);
  byRoutes.set(table, d);
  return d;
}

/**
 * The validator of the schema at `location`. Compiling one costs hundreds of milliseconds against
 * this large document, and its ~600 response schemas are ~70 distinct ones (every operation's 401,
 * 429 and 500 look alike), so a schema identical in content to one compiled before (same JSON,
 * `$ref`s into the same document) reuses that validator.
 */
function validatorFor(d: Document, location: string, schema: unknown): Promise<Check> {
  const key = createHash('sha256').update(JSON.stringify(schema)).digest('hex').slice(0, 24);
  let v = d.validators.get(key);
  if (v === undefined) {
    v = compiled(d, location, key);
    d.validators.set(key, v);
  }
  return v;
}

/**
 * The validator of a schema, compiled by this process or restored from what another test process
 * compiled (the library serialises its compiled form): each test file is its own process, and
 * compiling again in each one cost more than every validation together. Kept beside the
 * document's copy, keyed by the document's hash and the schema's, written whole or not at all.
 */
async function compiled(d: Document, location: string, key: string): Promise<Check> {
  const file = join(DIR, `${d.hash}-${key}.validator.json`);
  const fresh = () => validate(`${d.base}#/${location}`);
  if (existsSync(file)) {
    let restored: Validator | undefined;
    try {
      restored = restoreValidator(readFileSync(file, 'utf8'));
    } catch {
      // Written by another version of the library, or cut short: compile it again below.
    }
    if (restored !== undefined) {
      const r = restored;
      let own: Promise<Validator> | undefined;
      // A restored validator's lookups are plain parsed objects, so an instance key such as
      // "constructor" can find Object.prototype's and throw: such an answer is checked by a
      // validator compiled here, as every answer was before the cache.
      return async (value) => {
        try {
          return r(value as never, 'BASIC');
        } catch {
          own ??= fresh();
          return (await own)(value as never, 'BASIC');
        }
      };
    }
  }
  const v = await fresh();
  const partial = `${file}.${process.pid}.tmp`;
  writeFileSync(partial, v.serialize());
  renameSync(partial, file);
  return async (value) => v(value as never, 'BASIC');
}

/** Asserts that a response agrees with the document of the app that answered it. */
export async function checkResponse(
  app: FastifyInstance,
  method: string,
  url: string,
  res: LightMyRequestResponse,
): Promise<void> {
  if (!ENABLED) return;
  const d = documentOf(app);
  // As sent: a parameter matches any segment, and the document's literal segments need no decoding.
  const path = url.split('?')[0]!;
  const route = d.routes.find((r) => r.pattern.test(path));
  const m = method.toLowerCase();
  const op = route && d.doc.paths[route.template][m];
  // Not an operation of the document (an unknown path, an undocumented method): nothing to check.
  if (route === undefined || op === undefined) return;
  const what = `${method} ${url} → ${res.statusCode}`;
  const status = String(res.statusCode);
  const documented = op.responses?.[status] ?? op.responses?.default;
  assert.ok(documented, `${what}: status not documented for ${method} ${route.template}`);
  if (res.statusCode === 204 || res.statusCode === 304 || res.body === '') return;
  const type = String(res.headers['content-type'] ?? '')
    .split(';')[0]!
    .trim();
  const media = documented.content?.[type];
  assert.ok(media, `${what}: ${type} not documented (${Object.keys(documented.content ?? {}).join(', ')})`);
  if (type !== 'application/json' || media.schema === undefined) return;
  const v = await validatorFor(
    d,
    pointer('paths', route.template, m, 'responses', status, 'content', type, 'schema'),
    media.schema,
  );
  const out = await v(JSON.parse(res.body));
  if (!out.valid) {
    const errors = (out.errors ?? [])
      .slice(0, 5)
      .map((e) => `${e.instanceLocation} ${e.keyword.split('/').pop()} (${e.absoluteKeywordLocation.split('#')[1]})`);
    assert.fail(
      `${what}: the body breaks the documented schema:\n  ${errors.join('\n  ')}\n  ${res.body.slice(0, 400)}`,
    );
  }
}
