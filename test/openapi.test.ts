// The API description: an OpenAPI 3.1 document that lists exactly the routes
// the app serves, each secured, with a typed success response and its errors; /docs served locally.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import type { FastifyInstance } from 'fastify';
import { buildTestApp, call } from './helpers.js';

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'options', 'head', 'trace'] as const;

interface Operation {
  operationId?: string;
  security?: Record<string, string[]>[];
  responses?: Record<string, { description?: string; content?: Record<string, { schema?: unknown }> }>;
}

/** Every method + path the app routes, read from printRoutes' tree (paths in OpenAPI form). */
function registeredRoutes(app: FastifyInstance): Set<string> {
  const out = new Set<string>();
  const stack: string[] = [];
  for (const line of app.printRoutes({ commonPrefix: false }).split('\n')) {
    const m = /^([│ ]*)(?:├── |└── )(\S+)(?: \(([^)]*)\))?$/.exec(line);
    if (m === null) continue;
    const depth = m[1]!.length / 4;
    stack.length = depth;
    stack.push(m[2]!);
    if (m[3] === undefined) continue;
    const path = stack.join('').replace(/:([A-Za-z0-9_]+)/g, '{$1}');
    for (const method of m[3].split(',').map((s) => s.trim().toLowerCase())) {
      // HEAD routes are the ones Fastify adds for every GET; the document lists the GET.
      if (method !== 'head') out.add(`${method} ${path}`);
    }
  }
  return out;
}

async function spec(app: FastifyInstance) {
  const res = await call(app, 'GET', '/api/v1/openapi.json');
  assert.equal(res.status, 200);
  return res.body as {
    openapi: string;
    paths: Record<string, Record<string, Operation>>;
    components: {
      securitySchemes: Record<string, { type: string; scheme: string }>;
      schemas?: Record<string, unknown>;
    };
  };
}

const operations = (doc: Awaited<ReturnType<typeof spec>>) =>
  Object.entries(doc.paths).flatMap(([path, item]) =>
    METHODS.filter((m) => item[m] !== undefined).map((m) => ({ path, method: m, op: item[m]! })),
  );

test('the document is OpenAPI 3.1 with a bearerAuth scheme, served without a token', async (t) => {
  const app = await buildTestApp(t);
  const doc = await spec(app);
  assert.match(doc.openapi, /^3\.1\./);
  assert.deepEqual(
    {
      type: doc.components.securitySchemes.bearerAuth?.type,
      scheme: doc.components.securitySchemes.bearerAuth?.scheme,
    },
    { type: 'http', scheme: 'bearer' },
  );
  assert.ok(doc.components.schemas?.Error, 'the error envelope is a shared component');
});

// Provider callbacks prove their caller by the provider's own signature or a shared secret; Meta's
// one-time webhook verification carries only its verify token in the query.
const PROVIDER_SECURITY: Record<string, string | null> = {
  'POST /api/v1/channels/twilio/inbound': 'twilioSignature',
  'POST /api/v1/channels/twilio/status': 'twilioSignature',
  'POST /api/v1/channels/whatsapp/webhook': 'whatsappSignature',
  'GET /api/v1/channels/whatsapp/webhook': null,
  'POST /api/v1/channels/email/inbound': 'emailInboundBasic',
  'POST /api/v1/channels/email/inbound/mime': 'emailInboundBasic',
  // A signed attachment link is its own proof (its expiry and signature in the query).
  'GET /api/v1/attachments/{id}/content': null,
};

test('every operation under /api/v1 except login and provider callbacks requires bearerAuth', async (t) => {
  const app = await buildTestApp(t);
  const doc = await spec(app);
  const ops = operations(doc).filter((o) => o.path.startsWith('/api/v1/'));
  assert.ok(ops.length >= 20, `only ${ops.length} operations documented`);
  for (const { path, method, op } of ops) {
    const name = `${method.toUpperCase()} ${path}`;
    const schemes = (op.security ?? []).flatMap((s) => Object.keys(s));
    if (path === '/api/v1/auth/login') assert.ok(!schemes.includes('bearerAuth'), 'login is public');
    else if (name in PROVIDER_SECURITY) {
      const expected = PROVIDER_SECURITY[name];
      assert.deepEqual(schemes, expected === null ? [] : [expected], name);
      if (expected) assert.ok(doc.components.securitySchemes[expected], `${expected} is declared`);
    } else assert.ok(schemes.includes('bearerAuth'), `${name} has no bearerAuth security`);
  }
});

test('every operation has a 2xx response with a schema and documents its error responses', async (t) => {
  const app = await buildTestApp(t);
  const doc = await spec(app);
  const errorRef = (r: { content?: Record<string, { schema?: unknown }> }) =>
    JSON.stringify(r.content?.['application/json']?.schema ?? {});
  for (const { path, method, op } of operations(doc)) {
    const name = `${method.toUpperCase()} ${path}`;
    const codes = Object.keys(op.responses ?? {});
    const ok = codes.filter((c) => /^2\d\d$/.test(c));
    assert.ok(ok.length > 0, `${name}: no 2xx response`);
    for (const c of ok) {
      // JSON, except the event stream (text/event-stream) and provider callbacks (TwiML, a challenge).
      if (c === '204') continue;
      const content = op.responses![c]!.content ?? {};
      const schema = (content['application/json'] ?? Object.values(content)[0])?.schema;
      assert.ok(schema && typeof schema === 'object', `${name} ${c}: no schema`);
    }
    const errors = codes.filter((c) => /^[45]\d\d$/.test(c));
    assert.ok(errors.length > 0, `${name}: no error responses`);
    for (const c of errors) assert.ok(errorRef(op.responses![c]!) !== '{}', `${name} ${c}: no schema`);
    if (path.startsWith('/api/v1/') && path !== '/api/v1/auth/login' && !(name in PROVIDER_SECURITY)) {
      for (const c of ['401', '429', '500', '503']) assert.ok(codes.includes(c), `${name}: ${c} not documented`);
    }
  }
});

test('every operation has a unique camelCase operationId and a named success response', async (t) => {
  const app = await buildTestApp(t);
  const doc = await spec(app);
  const ids = new Map<string, string>();
  for (const { path, method, op } of operations(doc)) {
    const name = `${method.toUpperCase()} ${path}`;
    assert.match(op.operationId ?? '', /^[a-z][A-Za-z0-9]+$/, `${name}: operationId ${op.operationId}`);
    assert.ok(!ids.has(op.operationId!), `${name} and ${ids.get(op.operationId!)} share ${op.operationId}`);
    ids.set(op.operationId!, name);
    for (const [status, res] of Object.entries(op.responses ?? {})) {
      if (!status.startsWith('2')) continue;
      assert.ok(res.description && res.description !== 'Default Response', `${name} ${status}: unnamed`);
    }
  }
  assert.equal(ids.get('listConversations'), 'GET /api/v1/conversations');
});

test('every request body and success answer has an example, and each create links to its get and update', async (t) => {
  const app = await buildTestApp(t);
  const doc = await spec(app);
  for (const { path, method, op } of operations(doc)) {
    const name = `${method.toUpperCase()} ${path}`;
    type Media = { example?: unknown; examples?: Record<string, { value: unknown }> };
    const body = (op as { requestBody?: { content: Record<string, Media> } }).requestBody;
    // One example is `example`; several (a message's text and its canned response) are named `examples`.
    const first = (m: Media | undefined) => m?.example ?? Object.values(m?.examples ?? {})[0]?.value;
    const exampleOf = (content: Record<string, Media> | undefined) =>
      first(content?.['application/json']) ?? first(Object.values(content ?? {})[0]);
    if (body) assert.ok(exampleOf(body.content) !== undefined, `${name}: no request example`);
    for (const [status, res] of Object.entries(op.responses ?? {})) {
      if (!status.startsWith('2') || status === '204' || path === '/api/v1/events/stream') continue;
      const content = (res as { content?: Record<string, { example?: unknown }> }).content;
      assert.ok(exampleOf(content) !== undefined, `${name} ${status}: no example`);
    }
  }
  const created = doc.paths['/api/v1/guests']!.post!.responses!['201'] as {
    links?: Record<string, { operationId: string }>;
  };
  assert.deepEqual(Object.keys(created.links ?? {}).sort(), ['getGuest', 'updateGuest']);
});

test('each error response names the codes of its status as an enum', async (t) => {
  const app = await buildTestApp(t);
  const doc = await spec(app);
  const schemas = doc.components.schemas as Record<
    string,
    { properties: { error: { properties: { code: { enum: string[] } } } } }
  >;
  const codesOf = (status: string) => schemas[`Error${status}`]?.properties.error.properties.code.enum;
  assert.deepEqual(codesOf('401')?.sort(), [
    'INVALID_CREDENTIALS',
    'TOKEN_EXPIRED',
    'TOKEN_INVALID',
    'TOKEN_MISSING',
    'UNAUTHORIZED',
  ]);
  assert.deepEqual(codesOf('404'), ['NOT_FOUND']);
  for (const { path, method, op } of operations(doc)) {
    for (const [status, res] of Object.entries(op.responses ?? {})) {
      if (!/^[45]/.test(status) || path === '/readyz') continue;
      const ref = JSON.stringify(res.content?.['application/json']?.schema ?? {});
      assert.match(ref, new RegExp(`Error${status}`), `${method.toUpperCase()} ${path} ${status}: ${ref}`);
    }
  }
  // And what the server sends keeps to it.
  const res = await call(app, 'GET', '/api/v1/auth/me');
  assert.equal(res.status, 401);
  assert.ok(codesOf('401')!.includes(res.body.error.code));
});

test('the documented operations are exactly the routes the app serves', async (t) => {
  const app = await buildTestApp(t);
  const doc = await spec(app);
  const documented = new Set(operations(doc).map((o) => `${o.method} ${o.path}`));
  const served = new Set(
    [...registeredRoutes(app)].filter(
      (r) =>
        !/ \/docs(\/|\*|$)/.test(r) &&
        !/ \/favicon\.(svg|ico)$/.test(r) &&
        r !== 'get /api/v1/openapi.json' &&
        r !== 'get /docs',
    ),
  );
  // The parser must see the routes it is known to have, or the comparison proves nothing.
  for (const known of [
    'post /api/v1/auth/login',
    'get /api/v1/staff/{id}',
    'delete /api/v1/settings/{key}',
    'get /healthz',
  ]) {
    assert.ok(served.has(known), `parser missed ${known}`);
  }
  assert.deepEqual([...served].filter((r) => !documented.has(r)).sort(), [], 'served but not documented');
  assert.deepEqual([...documented].filter((r) => !served.has(r)).sort(), [], 'documented but not served');
});

test('/docs answers an HTML page that loads its script from a relative local path', async (t) => {
  const app = await buildTestApp(t);
  const first = await call(app, 'GET', '/docs');
  let page = first;
  if (first.status === 301 || first.status === 302) {
    // The page uses a relative script path, so it must be served under /docs/.
    assert.equal(first.headers.location, '/docs/');
    page = await call(app, 'GET', String(first.headers.location));
  }
  assert.equal(page.status, 200);
  assert.match(String(page.headers['content-type']), /^text\/html/);
  const html = String(page.raw.body);
  const scripts = [...html.matchAll(/<script[^>]*\bsrc="([^"]+)"/g)].map((m) => m[1]!);
  assert.ok(scripts.length > 0, 'the page loads a script');
  for (const src of scripts) {
    assert.doesNotMatch(src, /^(https?:)?\/\//, `script from another origin: ${src}`);
    const url = src.startsWith('/') ? src : `/docs/${src}`;
    const js = await call(app, 'GET', url);
    assert.equal(js.status, 200, url);
    assert.match(String(js.headers['content-type']), /javascript/);
  }
  assert.doesNotMatch(html, /https?:\/\/[^"']*cdn/i);
  assert.match(html, /\/api\/v1\/openapi\.json/);
});

test('/docs asks for nothing beyond this server: our title and icon, no web fonts, telemetry or vendor cloud', async (t) => {
  const app = await buildTestApp(t);
  const page = await call(app, 'GET', '/docs/');
  const html = String(page.raw.body);
  assert.match(html, /<title>Guest Messaging and Operations API<\/title>/);
  // Every URL the page itself references is on this server.
  const refs = [...html.matchAll(/\b(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
  assert.ok(refs.includes('/favicon.svg'));
  for (const ref of refs) assert.doesNotMatch(ref, /^(https?:)?\/\//, `the page references ${ref}`);
  // The configuration the script runs with turns off everything that would call out.
  const config = JSON.parse(/createApiReference\('#app', (\{[\s\S]*?\})\)\s*<\/script>/.exec(html)![1]!);
  assert.equal(config.withDefaultFonts, false, 'fonts from the vendor CDN');
  assert.equal(config.telemetry, false);
  assert.equal(config.agent.disabled, true);
  assert.equal(config.mcp.disabled, true);
  assert.equal(config.hideClientButton, true);
  assert.equal(config.authentication.preferredSecurityScheme, 'bearerAuth');
  const icon = await call(app, 'GET', '/favicon.ico');
  assert.equal(icon.status, 200);
  assert.match(String(icon.headers['content-type']), /^image\/svg\+xml/);
  // The document carries an introduction an integrator can start from.
  const doc = (await call(app, 'GET', '/api/v1/openapi.json')).body;
  for (const topic of ['Authentication', 'Errors', 'Rate limits', 'Pagination', 'Events and webhooks']) {
    assert.match(doc.info.description, new RegExp(`## ${topic}`), topic);
  }
});

test('every response in the document says what it means (no generated "Default Response")', async (t) => {
  const app = await buildTestApp(t);
  const doc = await spec(app);
  for (const { path, method, op } of operations(doc)) {
    for (const [status, res] of Object.entries(op.responses ?? {})) {
      const d = res.description ?? '';
      assert.ok(d !== '' && d !== 'Default Response', `${method.toUpperCase()} ${path} ${status}: "${d}"`);
    }
  }
});

test('every schema in components is used by an operation, directly or through another schema, but Error', async (t) => {
  const app = await buildTestApp(t);
  const doc = await spec(app);
  const schemas = doc.components.schemas ?? {};
  const refsIn = (value: unknown): string[] =>
    [...JSON.stringify(value).matchAll(/"#\/components\/schemas\/([^"]+)"/g)].map((m) => m[1]!);
  const used = new Set<string>();
  const todo = refsIn(doc.paths);
  while (todo.length > 0) {
    const name = todo.pop()!;
    if (used.has(name)) continue;
    used.add(name);
    todo.push(...refsIn(schemas[name]));
  }
  // `Error`, the envelope with any code, is what the typed client names every failure with.
  assert.deepEqual(
    Object.keys(schemas).filter((name) => !used.has(name) && name !== 'Error'),
    [],
  );
});

test('/docs, its script and the document are sent compressed when asked, with ETag and Cache-Control', async (t) => {
  const app = await buildTestApp(t);
  const html = String((await call(app, 'GET', '/docs/')).raw.body);
  const src = /<script[^>]*\bsrc="([^"]+)"/.exec(html)![1]!;
  const script = src.startsWith('/') ? src : `/docs/${src}`;
  for (const url of ['/docs/', script, '/api/v1/openapi.json']) {
    const plain = await app.inject({ method: 'GET', url });
    assert.equal(plain.statusCode, 200, url);
    assert.equal(plain.headers['content-encoding'], undefined, `${url}: no coding unless asked`);
    assert.ok(plain.headers['cache-control'], `${url}: Cache-Control`);
    assert.match(String(plain.headers.vary), /accept-encoding/i, `${url}: Vary`);
    for (const [asked, coding, decode] of [
      ['gzip', 'gzip', gunzipSync],
      ['gzip, deflate, br', 'br', brotliDecompressSync],
      ['br;q=0, gzip;q=0.5', 'gzip', gunzipSync],
    ] as const) {
      const res = await app.inject({ method: 'GET', url, headers: { 'accept-encoding': asked } });
      assert.equal(res.statusCode, 200, `${url} ${asked}`);
      assert.equal(res.headers['content-encoding'], coding, `${url} ${asked}`);
      assert.ok(decode(res.rawPayload).equals(plain.rawPayload), `${url} ${asked}: the same bytes once decoded`);
      const etag = String(res.headers.etag);
      assert.match(etag, /^"[^"]+"$/, `${url} ${asked}: a strong ETag`);
      assert.notEqual(etag, plain.headers.etag, `${url}: each coding has its own ETag`);
      const again = await app.inject({
        method: 'GET',
        url,
        headers: { 'accept-encoding': asked, 'if-none-match': etag },
      });
      assert.equal(again.statusCode, 304, `${url} ${asked}: unchanged`);
      assert.equal(again.rawPayload.length, 0);
      if (url === script)
        assert.ok(res.rawPayload.length < 1.5 * 1024 * 1024, `the script as sent: ${res.rawPayload.length} bytes`);
    }
  }
});
