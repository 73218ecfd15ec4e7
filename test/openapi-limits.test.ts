// The limits the served document states are the ones the server enforces (docs/decisions.md): each
// pattern refuses what the server refuses (400 VALIDATION_ERROR naming the field) and takes what it
// takes, so a client or fuzzer generated from the document neither sends what will be refused nor
// holds back what would be taken.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fullFormats } from 'ajv-formats/dist/formats.js';
import fc from 'fast-check';
import type { FastifyInstance } from 'fastify';
import { newId } from '../src/lib/ids.js';
import { EMAIL_PATTERN, NUL_FREE } from '../src/lib/openapi-limits.js';
import { buildTestApp, call, createStaff, type Res } from './helpers.js';

// biome-ignore lint/suspicious/noExplicitAny: the served OpenAPI document, read as JSON.
type Doc = any;
type Schema = Record<string, unknown>;

const docOf = async (app: FastifyInstance): Promise<Doc> => (await call(app, 'GET', '/api/v1/openapi.json')).body;

function refused(res: Res, field: string, what: string) {
  assert.equal(res.status, 400, `${what}: ${JSON.stringify(res.body)}`);
  assert.equal(res.body.error.code, 'VALIDATION_ERROR', what);
  const fields = res.body.error.details.map((d: { field: string }) => d.field);
  assert.ok(fields.includes(field), `${what}: ${JSON.stringify(res.body.error.details)}`);
}

/** Every schema in a request part of the document, with where it is. */
function requestSchemas(doc: Doc): [string, Schema][] {
  const out: [string, Schema][] = [];
  const walk = (s: unknown, where: string) => {
    if (typeof s !== 'object' || s === null) return;
    if (Array.isArray(s)) {
      for (const [i, v] of s.entries()) walk(v, `${where}/${i}`);
      return;
    }
    out.push([where, s as Schema]);
    for (const [k, v] of Object.entries(s))
      if (!['examples', 'example', 'enum', 'const', 'default'].includes(k)) walk(v, `${where}/${k}`);
  };
  for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, Doc>>)) {
    for (const [method, op] of Object.entries(item)) {
      for (const p of op.parameters ?? []) walk(p.schema, `${method} ${path} ${p.in} ${p.name}`);
      for (const [type, media] of Object.entries(op.requestBody?.content ?? {})) {
        walk((media as Doc).schema, `${method} ${path} body ${type}`);
      }
    }
  }
  walk(doc.components.schemas.JsonInput, 'JsonInput');
  return out;
}

test('every string a request may carry has a pattern, enum or const, and every open object a key pattern', async (t) => {
  const app = await buildTestApp(t);
  const schemas = requestSchemas(await docOf(app));
  assert.ok(schemas.length > 300, `only ${schemas.length} request schemas found`);
  for (const [where, s] of schemas) {
    if (s.type === 'string') {
      assert.ok(s.pattern !== undefined || s.enum !== undefined || s.const !== undefined, `${where}: no pattern`);
      // Every pattern refuses U+0000, which the server refuses everywhere.
      if (typeof s.pattern === 'string') assert.ok(!new RegExp(s.pattern, 'u').test('a\u0000b'), `${where}: takes NUL`);
    }
    if (s.type === 'object' && s.additionalProperties !== false) {
      assert.equal(
        (s.propertyNames as Schema | undefined)?.pattern,
        NUL_FREE,
        `${where}: open object without propertyNames`,
      );
    }
    if (!/\/(properties|patternProperties)$/.test(where))
      assert.ok(Object.keys(s).length > 0, `${where}: an empty schema`);
  }
});

test('no answer or error detail is left untyped: no empty schema anywhere in the document but a provider payload', async (t) => {
  const app = await buildTestApp(t);
  const doc = await docOf(app);
  const empty: string[] = [];
  const walk = (s: unknown, where: string) => {
    if (typeof s !== 'object' || s === null) return;
    if (Array.isArray(s)) {
      for (const [i, v] of s.entries()) walk(v, `${where}/${i}`);
      return;
    }
    const o = s as Schema;
    const isSchema =
      where.endsWith('/schema') ||
      /\/(properties\/[^/]+|items|additionalProperties|anyOf\/\d+|oneOf\/\d+)$/.test(where);
    if (isSchema && Object.keys(o).every((k) => ['description', 'examples', 'title'].includes(k))) empty.push(where);
    for (const [k, v] of Object.entries(o))
      if (!['examples', 'example', 'enum', 'const', 'default'].includes(k)) walk(v, `${where}/${k}`);
  };
  walk(doc.paths, '#/paths');
  walk(doc.components.schemas, '#/components/schemas');
  // Meta's webhook payload is Meta's to define; the API reads only the parts it documents.
  assert.deepEqual(
    empty.filter((w) => !w.includes('/channels/whatsapp/webhook/')),
    [],
  );
  const details = doc.components.schemas.Error400.properties.error.properties.details;
  assert.deepEqual(Object.keys(details.items.properties).sort(), ['field', 'message']);
  const eventTypes = doc.components.schemas.Event.oneOf.flatMap((b: Doc) => b.properties.type.enum);
  assert.equal(new Set(eventTypes).size, eventTypes.length, 'each event type has one shape');
  assert.ok(doc.components.schemas.Setting.oneOf.some((b: Doc) => b.properties.key.const === 'departments'));
});

test('the documented e-mail pattern has the syntax of ajv-formats full email (below its lengths)', () => {
  const pattern = new RegExp(EMAIL_PATTERN, 'u');
  const server = fullFormats.email as RegExp;
  const samples = [
    'ana@example.com',
    'ANA.Lopes@EXAMPLE.COM',
    "o'brien+tag@mail.example.co.uk",
    'x_y-z!#$%&*/=?^`{|}~@a-b.pt',
    '"a b"@example.com',
    'ana@[127.0.0.1]',
    'ana@localhost',
    'josé@example.com',
    'ana@exämple.com',
    'ana@exa_mple.com',
    '.ana@example.com',
    'ana..lopes@example.com',
    'ana@-example.com',
    'ana@example.com.',
    'ana@example',
    'ſ@example.com',
    'K@example.com',
  ];
  for (const s of samples) assert.equal(pattern.test(s), server.test(s), s);
  const chars = fc.constantFrom(...'aZ09.-_@+"[]( )é\u212a\u017f!'.split(''));
  fc.assert(
    fc.property(fc.string({ unit: chars, maxLength: 20 }), (s) => pattern.test(s) === server.test(s)),
    { numRuns: 5000 },
  );
});

test("an address past RFC 5321's lengths is refused; one at them is stored", async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const pattern = new RegExp(EMAIL_PATTERN, 'u');
  const label = (n: number) => 'd'.repeat(n);
  const tooLong = [
    `${'a'.repeat(65)}@example.com`,
    `ana@${label(64)}.com`,
    `ana@${label(63)}.${label(63)}.${label(63)}.${label(63)}.com`,
  ];
  for (const email of tooLong) {
    assert.ok(!pattern.test(email), email);
    refused(await call(app, 'POST', '/guests', { token: admin.token, body: { name: 'A', email } }), 'email', email);
    const staff = { name: 'S', email, role: 'staff' };
    refused(await call(app, 'POST', '/staff', { token: admin.token, body: staff }), 'email', email);
  }
  for (const email of [`${'a'.repeat(64)}@example.com`, `ana@${label(63)}.com`]) {
    assert.ok(pattern.test(email), email);
    const res = await call(app, 'POST', '/guests', { token: admin.token, body: { name: 'A', email } });
    assert.equal(res.status, 201, `${email}: ${JSON.stringify(res.body)}`);
  }
});

test('an e-mail the pattern refuses is a 400; one it takes (plus, apostrophe, capitals) is stored', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const pattern = new RegExp(EMAIL_PATTERN, 'u');
  for (const email of ['"a b"@example.com', 'ana@[127.0.0.1]', 'ana@localhost', 'josé@example.com']) {
    assert.ok(!pattern.test(email), email);
    refused(await call(app, 'POST', '/guests', { token: admin.token, body: { name: 'A', email } }), 'email', email);
  }
  for (const email of ["o'brien+tag@mail.example.co.uk", 'ANA.Lopes@EXAMPLE.COM', 'x_y-z!#$%&*/=?^`{|}~@a-b.pt']) {
    assert.ok(pattern.test(email), email);
    const res = await call(app, 'POST', '/guests', { token: admin.token, body: { name: 'A', email } });
    assert.equal(res.status, 201, `${email}: ${JSON.stringify(res.body)}`);
  }
});

test('U+0000 is refused in any string, while any other character, emoji or script is taken', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const token = admin.token;
  refused(await call(app, 'POST', '/guests', { token, body: { name: 'A\u0000B' } }), 'name', 'a name');
  refused(
    await call(app, 'POST', '/guests', { token, body: { name: 'A', tags: ['ok', 'b\u0000'] } }),
    'tags.1',
    'a tag',
  );
  refused(await call(app, 'GET', '/guests?search=a%00b', { token }), 'search', 'a query');
  refused(
    await call(app, 'PUT', '/settings/custom.x', { token, body: { value: { 'k\u0000': 1 } } }),
    'value.k\\u0000',
    'a key in any JSON',
  );
  const name = 'Zoë Ø’Brien 李小龙 😀 e\u0301 \u200b';
  assert.ok(new RegExp(NUL_FREE, 'u').test(name));
  const res = await call(app, 'POST', '/guests', { token, body: { name, tags: ['café', '🛎'] } });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  assert.equal(res.data.name, name);
});

test('a department must have the form of the departments setting and be listed in it', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const token = admin.token;
  const staff = (department: string) => ({
    name: 'N',
    email: `n${Math.random().toString(36).slice(2)}@hotel.test`,
    role: 'staff',
    department,
  });
  for (const department of ['Front Desk', 'FRONT-DESK', '-spa']) {
    const res = await call(app, 'POST', '/staff', { token, body: staff(department) });
    refused(res, 'department', department);
    assert.match(res.body.error.message, /departments setting/);
    refused(
      await call(app, 'POST', '/tasks', { token, body: { title: 'T', department } }),
      'department',
      `task ${department}`,
    );
  }
  // Of the right form but not listed: still refused, naming the ones that are.
  const unlisted = await call(app, 'POST', '/tasks', { token, body: { title: 'T', department: 'spa' } });
  refused(unlisted, 'department', 'spa');
  assert.match(JSON.stringify(unlisted.body.error.details), /housekeeping/);
  const set = await call(app, 'PUT', '/settings/departments', { token, body: { value: ['front-desk', 'spa-2'] } });
  assert.equal(set.status, 200);
  assert.equal((await call(app, 'POST', '/staff', { token, body: staff('spa-2') })).status, 201);
  assert.equal((await call(app, 'POST', '/tasks', { token, body: { title: 'T', department: 'spa-2' } })).status, 201);
  // A filter names a department to look for: one of another form finds nothing, as before.
  const list = await call(app, 'GET', '/staff?department=Front%20Desk', { token });
  assert.equal(list.status, 200);
  assert.equal(list.data.length, 0);
});

test('a webhook URL must be absolute http(s) without credentials; any case of the scheme is taken', async (t) => {
  const app = await buildTestApp(t, { WEBHOOK_ALLOW_PRIVATE: 'true' });
  const admin = await createStaff(app, 'admin');
  const doc = await docOf(app);
  const pattern = new RegExp(
    doc.paths['/api/v1/webhooks'].post.requestBody.content['application/json'].schema.properties.url.pattern,
    'u',
  );
  const body = (url: string) => ({ url, events: ['guest.created'] });
  for (const url of [
    'ftp://hooks.example.com/',
    'https://user:pw@hooks.example.com/',
    '//hooks.example.com/x',
    'hooks.example.com',
    'https:///x',
  ]) {
    assert.ok(!pattern.test(url), url);
    refused(await call(app, 'POST', '/webhooks', { token: admin.token, body: body(url) }), 'url', url);
  }
  for (const url of ['HTTPS://Hooks.Example.com/in?x=1#f', 'http://127.0.0.1:8080/hook', 'https://[::1]/a@b']) {
    assert.ok(pattern.test(url), url);
    const res = await call(app, 'POST', '/webhooks', { token: admin.token, body: body(url) });
    assert.equal(res.status, 201, `${url}: ${JSON.stringify(res.body)}`);
  }
});

test('event types in a query must be known ones, comma-separated, blanks around each ignored', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const ok = await call(app, 'GET', '/events?types=%20guest.created%20,message.created,', { token: admin.token });
  assert.equal(ok.status, 200);
  const bad = await call(app, 'GET', '/events?types=guest.created,guest.creatd', { token: admin.token });
  refused(bad, 'types', 'an unknown type');
  assert.match(bad.body.error.details[0].message, /conversation\.created/);
});

test('ids a body or filter names must have their type prefix and 26 base32 characters', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const token = admin.token;
  for (const [field, value] of [
    ['guestId', 'gst_nope'],
    ['guestId', newId('cnv')],
    ['assignee', 'stf_01JD8X3K5Q7W9E2R4T6Y8V0M1N'],
    ['conversationId', 'cnv_01jd8x3k5q7w9e2r4t6y8u0i1o'],
  ] as const) {
    refused(
      await call(app, 'POST', '/tasks', { token, body: { title: 'T', department: 'housekeeping', [field]: value } }),
      field,
      `${field} ${value}`,
    );
  }
  refused(
    await call(app, 'POST', '/conversations', { token, body: { guestId: 'x', channel: 'web' } }),
    'guestId',
    'conv',
  );
  refused(await call(app, 'GET', '/conversations?assignee=me', { token }), 'assignee', 'a filter');
  for (const assignee of ['unassigned', admin.id]) {
    assert.equal((await call(app, 'GET', `/conversations?assignee=${assignee}`, { token })).status, 200, assignee);
    assert.equal((await call(app, 'GET', `/tasks?assignee=${assignee}`, { token })).status, 200, assignee);
  }
  // A well-formed id naming nothing is still told apart from a malformed one.
  const missing = await call(app, 'POST', '/tasks', {
    token,
    body: { title: 'T', department: 'housekeeping', guestId: newId('gst') },
  });
  refused(missing, 'guestId', 'a missing guest');
  assert.match(missing.body.error.message + JSON.stringify(missing.body.error.details), /does not exist/);
});

test('bulk items are documented as the create body, yet each item still stands alone', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const doc = await docOf(app);
  const bulk = doc.paths['/api/v1/guests/bulk'].post.requestBody.content['application/json'].schema;
  const create = doc.paths['/api/v1/guests'].post.requestBody.content['application/json'].schema;
  assert.deepEqual(bulk.properties.items.items.properties, create.properties);
  assert.deepEqual(bulk.properties.items.items.required, create.required);
  const items = [
    { name: 'Good' },
    { name: 'Bad', email: 'nope' },
    { name: 'N\u0000' },
    { name: 'E', extra: 1 },
    { name: 'Also good' },
  ];
  const res = await call(app, 'POST', '/guests/bulk', { token: admin.token, body: { items } });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.deepEqual(
    res.data.map((r: { success: boolean; error?: { code: string } }) => r.error?.code ?? 'ok'),
    ['ok', 'VALIDATION_ERROR', 'VALIDATION_ERROR', 'VALIDATION_ERROR', 'ok'],
  );
  assert.deepEqual(res.data[1].error.details, [
    { field: 'email', message: 'must be an e-mail address like ana@example.com' },
  ]);
});
