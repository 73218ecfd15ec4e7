// The envelope and the error codes every failure maps to (docs/decisions.md, Requests and responses): routing, body parsing,
// validation without coercion, prototype poisoning, request ids and hidden internals.
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { test } from 'node:test';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { assertError } from '../fixtures.js';
import { buildTestApp, call, createStaff, type Res } from '../helpers.js';

const fields = (res: Res) => (res.body.error?.details ?? []).map((d: { field: string }) => d.field);

test('an unknown route is 404 NOT_FOUND in the envelope, with or without a token', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  assertError(await call(app, 'GET', '/api/v1/nothing-here'), 404, 'NOT_FOUND');
  assertError(await call(app, 'GET', '/api/v2/staff', { token: admin.token }), 404, 'NOT_FOUND');
  assertError(await call(app, 'POST', '/api/v1/staff/x/y/z', { token: admin.token, body: {} }), 404, 'NOT_FOUND');
  assertError(await call(app, 'GET', '/'), 404, 'NOT_FOUND');
});

test('a wrong method on a known path is 405 METHOD_NOT_ALLOWED with Allow', async (t) => {
  const app = await buildTestApp(t);
  const cases: [string, string, string[]][] = [
    ['DELETE', '/api/v1/auth/login', ['POST']],
    ['PUT', '/api/v1/staff', ['GET', 'POST']],
    ['DELETE', '/api/v1/staff/stf_01jd8x3k5q7w9e2r4t6y8u0i1o', ['GET', 'PATCH']],
    ['POST', '/api/v1/settings/hotel', ['GET', 'PUT', 'DELETE']],
  ];
  for (const [method, url, allowed] of cases) {
    const res = await call(app, method as 'GET', url);
    assertError(res, 405, 'METHOD_NOT_ALLOWED');
    const allow = String(res.headers.allow ?? '')
      .split(',')
      .map((m) => m.trim());
    for (const m of allowed) assert.ok(allow.includes(m), `${url}: Allow "${res.headers.allow}" lacks ${m}`);
    assert.ok(!allow.includes(method), `${url}: Allow lists ${method}`);
  }
});

test('a body over 1 MiB is 413 PAYLOAD_TOO_LARGE', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const big = JSON.stringify({ value: 'x'.repeat(1024 * 1024) });
  assertError(
    await call(app, 'PUT', '/settings/custom.big', { token: admin.token, body: big }),
    413,
    'PAYLOAD_TOO_LARGE',
  );
  assertError(await call(app, 'POST', '/auth/login', { body: big }), 413, 'PAYLOAD_TOO_LARGE');
});

test('a body that is not JSON is 415 UNSUPPORTED_MEDIA_TYPE', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  for (const type of [
    'text/plain',
    'application/x-www-form-urlencoded',
    'application/xml',
    'multipart/form-data; boundary=x',
  ]) {
    const res = await call(app, 'POST', '/auth/login', {
      body: 'email=a@hotel.test&password=x',
      headers: { 'content-type': type },
    });
    assertError(res, 415, 'UNSUPPORTED_MEDIA_TYPE');
  }
  const put = await call(app, 'PUT', '/settings/custom.text', {
    token: admin.token,
    body: '{"value":"hello"}',
    headers: { 'content-type': 'text/plain' },
  });
  assertError(put, 415, 'UNSUPPORTED_MEDIA_TYPE');
  assert.equal((await call(app, 'GET', '/settings/custom.text', { token: admin.token })).status, 404);
});

test('a compressed body is 415 UNSUPPORTED_MEDIA_TYPE naming the coding, and nothing is stored', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const json = JSON.stringify({ name: 'Compressed Guest' });
  const bodies: Record<string, Buffer> = {
    gzip: gzipSync(json),
    br: brotliCompressSync(json),
    deflate: deflateSync(json),
    // Only the header counts: a plain body labelled with a coding is refused too.
    'x-unknown': Buffer.from(json),
  };
  for (const [coding, body] of Object.entries(bodies)) {
    const res = await call(app, 'POST', '/guests', {
      token: admin.token,
      body,
      headers: { 'content-encoding': coding },
    });
    assertError(res, 415, 'UNSUPPORTED_MEDIA_TYPE');
    assert.match(res.body.error.message, new RegExp(`"${coding}"`));
    assert.equal(res.headers['accept-encoding'], 'identity');
  }
  const list = await call(app, 'GET', '/guests?search=compressed', { token: admin.token });
  assert.equal(list.body.meta.total, 0);
  // identity is no coding at all; a bodiless request's Content-Encoding is nothing to decode.
  const plain = await call(app, 'POST', '/guests', {
    token: admin.token,
    body: json,
    headers: { 'content-encoding': 'Identity' },
  });
  assert.equal(plain.status, 201, JSON.stringify(plain.body));
  const get = await call(app, 'GET', '/guests?search=compressed', {
    token: admin.token,
    headers: { 'content-encoding': 'gzip' },
  });
  assert.equal(get.status, 200);
  assert.equal(get.body.meta.total, 1);
});

test('malformed JSON is 400 VALIDATION_ERROR', async (t) => {
  const app = await buildTestApp(t);
  for (const body of ['{"email":', '{email: "a"}', "{'a':1}", '[1,2', 'nul']) {
    assertError(await call(app, 'POST', '/auth/login', { body }), 400, 'VALIDATION_ERROR');
  }
});

test('__proto__ and constructor.prototype bodies are 400 and change nothing', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const bodies = [
    '{"name":"Polly","email":"polly@hotel.test","role":"staff","__proto__":{"role":"admin","polluted":true}}',
    '{"name":"Polly","email":"polly@hotel.test","role":"staff","constructor":{"prototype":{"polluted":true}}}',
    '{"value":{"nested":{"__proto__":{"polluted":true}}}}',
  ];
  for (const [i, body] of bodies.entries()) {
    const url = i < 2 ? '/staff' : '/settings/custom.proto';
    const res = await call(app, i < 2 ? 'POST' : 'PUT', url, { token: admin.token, body });
    assertError(res, 400, 'VALIDATION_ERROR');
    // Valid JSON, refused for the key it holds: the message says so, not "not valid JSON".
    assert.match(res.body.error.message, /__proto__/);
    assert.doesNotMatch(res.body.error.message, /not valid JSON/);
  }
  assert.equal(({} as { polluted?: unknown }).polluted, undefined);
  assert.equal(Object.hasOwn(Object.prototype, 'polluted'), false);
  const list = await call(app, 'GET', '/staff', { token: admin.token });
  assert.equal(list.body.meta.total, 1);
  assert.equal((await call(app, 'GET', '/settings/custom.proto', { token: admin.token })).status, 404);
});

test('a method that carries a body, sent without a Content-Type to a route that does not take it, is 405', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const res = await app.inject({
    method: 'QUERY' as 'GET',
    url: '/api/v1/auth/me',
    headers: { authorization: `Bearer ${admin.token}` },
  });
  assert.equal(res.statusCode, 405);
  assert.equal(JSON.parse(res.body).error.code, 'METHOD_NOT_ALLOWED');
  assert.match(String(res.headers.allow), /GET/);
  const nowhere = await app.inject({ method: 'QUERY' as 'GET', url: '/api/v1/nowhere' });
  assert.equal(nowhere.statusCode, 404);
});

test('a bad value in a nullable field is reported once, without a "must be null" beside it', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const res = await call(app, 'POST', '/guests', { token: admin.token, body: { name: 'A', email: 'bad' } });
  assertError(res, 400, 'VALIDATION_ERROR');
  assert.deepEqual(
    res.body.error.details.map((d: { field: string }) => d.field),
    ['email'],
    JSON.stringify(res.body.error.details),
  );
  assert.doesNotMatch(JSON.stringify(res.body.error.details), /must be null/);
  // A value of neither type still names both.
  const typed = await call(app, 'POST', '/guests', { token: admin.token, body: { name: 'A', email: 5 } });
  assert.deepEqual(typed.body.error.details, [{ field: 'email', message: 'must be string or null' }]);
});

test('a bulk item with a NUL character or a poisoned key fails alone; the other items are applied', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const body =
    '{"items":[{"name":"Kept"},{"name":"Bad\\u0000"},{"name":"P","__proto__":{"x":1}},{"name":"Also kept"}]}';
  const res = await call(app, 'POST', '/guests/bulk', { token: admin.token, body });
  assert.equal(res.status, 200, res.raw.body);
  assert.deepEqual(
    res.data.map((r: { success: boolean; error?: { code: string } }) => r.error?.code ?? 'ok'),
    ['ok', 'VALIDATION_ERROR', 'VALIDATION_ERROR', 'ok'],
  );
  const list = await call(app, 'GET', '/guests', { token: admin.token });
  assert.deepEqual(list.data.map((g: { name: string }) => g.name).sort(), ['Also kept', 'Kept']);
});

test('an unknown body field is 400 naming it', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const res = await call(app, 'POST', '/staff', {
    token: admin.token,
    body: { name: 'Eve', email: 'eve@hotel.test', role: 'staff', password_hash: 'x', isOwner: true },
  });
  assertError(res, 400, 'VALIDATION_ERROR');
  assert.ok(fields(res).includes('password_hash'));
  assert.ok(fields(res).includes('isOwner'));
  for (const d of res.body.error.details) assert.equal(typeof d.message, 'string');
});

test('body values are never coerced: a number for a string, "true" for a boolean are 400', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const staff = await createStaff(app, 'staff');
  const n = await call(app, 'POST', '/auth/login', { body: { email: 12345, password: 'x' } });
  assertError(n, 400, 'VALIDATION_ERROR');
  assert.deepEqual(fields(n), ['email']);
  for (const active of ['true', 'false', 1, 0, null]) {
    const res = await call(app, 'PATCH', `/staff/${staff.id}`, { token: admin.token, body: { active } });
    assertError(res, 400, 'VALIDATION_ERROR');
    assert.deepEqual(fields(res), ['active']);
  }
  const arr = await call(app, 'PATCH', `/staff/${staff.id}`, { token: admin.token, body: { name: ['Eve'] } });
  assertError(arr, 400, 'VALIDATION_ERROR');
  const me = await call(app, 'GET', `/staff/${staff.id}`, { token: admin.token });
  assert.equal(me.data.active, true);
});

test('query values of the wrong type or out of range are 400 naming the parameter', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  for (const [q, field] of [
    ['limit=abc', 'limit'],
    ['limit=0', 'limit'],
    ['limit=101', 'limit'],
    ['limit=1.5', 'limit'],
    ['limit=-1', 'limit'],
    ['page=0', 'page'],
    ['page=abc', 'page'],
    ['active=maybe', 'active'],
    ['role=owner', 'role'],
  ]) {
    const res = await call(app, 'GET', `/staff?${q}`, { token: admin.token });
    assertError(res, 400, 'VALIDATION_ERROR');
    assert.ok(fields(res).includes(field), `${q}: ${JSON.stringify(res.body)}`);
  }
  const ok = await call(app, 'GET', '/staff?limit=100&page=1', { token: admin.token });
  assert.equal(ok.status, 200);
  assert.equal(ok.body.meta.limit, 100);
});

test('a malformed URL or an over-long path parameter is 400 VALIDATION_ERROR in the envelope with the usual headers', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  for (const url of ['/staff/%E0%A4%A', `/staff/${'x'.repeat(300)}`]) {
    const res = await call(app, 'GET', url, { token: admin.token });
    assertError(res, 400, 'VALIDATION_ERROR');
    assert.ok(res.headers['x-ratelimit-limit']);
    assert.doesNotMatch(res.raw.body, /FST_ERR/);
  }
});

test('a NUL character in a body, path or query is 400 on every store (PostgreSQL text cannot hold it)', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const body = await call(app, 'POST', '/staff', {
    token: admin.token,
    body: { name: 'Nul\u0000Name', email: 'nul@hotel.test', role: 'staff', password: 'long enough password' },
  });
  assertError(body, 400, 'VALIDATION_ERROR');
  assert.deepEqual(fields(body), ['name']);
  const nested = await call(app, 'PUT', '/settings/custom.nul', {
    token: admin.token,
    body: { value: { a: ['ok', 'x\u0000'] } },
  });
  assertError(nested, 400, 'VALIDATION_ERROR');
  assert.deepEqual(fields(nested), ['value.a.1']);
  const key = await call(app, 'PUT', '/settings/custom.nul', { token: admin.token, body: { value: { 'k\u0000': 1 } } });
  assertError(key, 400, 'VALIDATION_ERROR');
  assertError(await call(app, 'GET', '/staff/stf_x%00y', { token: admin.token }), 400, 'VALIDATION_ERROR');
  assertError(await call(app, 'GET', '/staff?department=a%00b', { token: admin.token }), 400, 'VALIDATION_ERROR');
  assert.equal((await call(app, 'GET', '/staff', { token: admin.token })).body.meta.total, 1);
});

test('absurdly deep JSON is 400, not a stack overflow: 500', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const nested = (n: number) => `${'['.repeat(n)}${']'.repeat(n)}`;
  const fine = await call(app, 'PUT', '/settings/custom.deep', { token: admin.token, body: `{"value":${nested(50)}}` });
  assert.equal(fine.status, 200);
  for (const n of [100, 200_000]) {
    const res = await call(app, 'PUT', '/settings/custom.deep', { token: admin.token, body: `{"value":${nested(n)}}` });
    assertError(res, 400, 'VALIDATION_ERROR');
    assert.match(fields(res)[0], /^value(\.0)+$/);
  }
  const kept = await call(app, 'GET', '/settings/custom.deep', { token: admin.token });
  assert.equal(JSON.stringify(kept.data.value), nested(50));
});

test('every response carries X-Request-Id; a valid incoming one is echoed, a bad one replaced', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const responses = [
    await call(app, 'GET', '/auth/me', { token: admin.token }),
    await call(app, 'GET', '/auth/me'),
    await call(app, 'GET', '/nowhere'),
    await call(app, 'PUT', '/auth/me'),
    await call(app, 'POST', '/auth/login', { body: '{' }),
    await call(app, 'GET', '/healthz'),
    await call(app, 'GET', '/api/v1/openapi.json'),
  ];
  const ids = responses.map((r) => r.headers['x-request-id']);
  for (const id of ids) assert.match(String(id), /^[A-Za-z0-9._:-]{1,128}$/);
  assert.equal(new Set(ids).size, ids.length, 'ids are unique');

  const echoed = await call(app, 'GET', '/nowhere', { headers: { 'x-request-id': 'client-trace.42:abc' } });
  assert.equal(echoed.headers['x-request-id'], 'client-trace.42:abc');
  for (const bad of ['has spaces in it', 'x'.repeat(129), 'semi;colon']) {
    const res = await call(app, 'GET', '/healthz', { headers: { 'x-request-id': bad } });
    assert.ok(res.headers['x-request-id']);
    assert.notEqual(res.headers['x-request-id'], bad);
  }
});

test('a 500 hides internals: INTERNAL_ERROR, no stack, no SQL, and the request id to quote', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  await app.ctx.store.db.schema.dropTable('settings').execute();
  const res = await call(app, 'GET', '/settings', { token: admin.token });
  assertError(res, 500, 'INTERNAL_ERROR');
  assert.doesNotMatch(res.raw.body, /settings|select|from|sqlite|relation|postgres|stack|\.ts|at /i);
  assert.equal(res.body.error.details?.requestId, res.headers['x-request-id']);
  assert.ok(res.headers['x-ratelimit-limit']);
  const put = await call(app, 'PUT', '/settings/custom.x', { token: admin.token, body: { value: 1 } });
  assertError(put, 500, 'INTERNAL_ERROR');
  assert.doesNotMatch(put.raw.body, /insert|settings|constraint|stack/i);
});

test('no response says what it is powered by', async (t) => {
  const app = await buildTestApp(t);
  for (const url of ['/healthz', '/api/v1/auth/me', '/api/v1/nothing', '/docs/']) {
    const res = await call(app, 'GET', url);
    assert.equal(res.headers['x-powered-by'], undefined, url);
    assert.equal(res.headers.server, undefined, url);
  }
});

test('a 4xx raised while reading a body is answered with a status and code the document lists', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  // A body stream that fails mid-way with a status of its own (as a decoding or proxying stream
  // may): Fastify passes that status on; the answer must still be one the route documents.
  for (const status of [422, 451, 400]) {
    const body = new Readable({
      read() {
        this.destroy(Object.assign(new Error('the body stream broke'), { statusCode: status }));
      },
    });
    const res = await app.inject({
      method: 'POST',
      url: '/api/v1/guests',
      headers: { authorization: `Bearer ${admin.token}`, 'content-type': 'application/json' },
      payload: body,
    });
    assert.equal(res.statusCode, 400, `a stream failing with ${status}`);
    assert.equal(res.json().error.code, 'VALIDATION_ERROR');
  }
});

test('a body that is not valid UTF-8 is 400 naming it, and nothing is stored', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  // "Ana" then a lone continuation byte and an overlong encoding: neither is UTF-8.
  for (const bad of [Buffer.from([0x80]), Buffer.from([0xc0, 0xaf])]) {
    const body = Buffer.concat([Buffer.from('{"name":"Ana'), bad, Buffer.from('"}')]);
    const res = await call(app, 'POST', '/guests', { token: admin.token, body });
    assertError(res, 400, 'VALIDATION_ERROR');
    assert.match(res.body.error.message, /UTF-8/);
  }
  const list = await call(app, 'GET', '/guests', { token: admin.token });
  assert.equal(list.body.meta.total, 0);
  // Valid multi-byte text still passes.
  const ok = await call(app, 'POST', '/guests', { token: admin.token, body: { name: 'Zoë 日本 🙂' } });
  assert.equal(ok.status, 201);
  assert.equal(ok.data.name, 'Zoë 日本 🙂');
});

test('a query parameter given twice is 400 saying so, not a type error', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const res = await call(app, 'GET', '/guests?limit=1&limit=2', { token: admin.token });
  assertError(res, 400, 'VALIDATION_ERROR');
  assert.deepEqual(res.body.error.details, [{ field: 'limit', message: 'is given more than once; give it once' }]);
  const status = await call(app, 'GET', '/conversations?status=open&status=closed', { token: admin.token });
  assert.deepEqual(status.body.error.details, [{ field: 'status', message: 'is given more than once; give it once' }]);
});

test('an operation without a body takes a JSON Content-Type with an empty body', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const json = { 'content-type': 'application/json' };
  // A route that takes a body still says it is empty.
  const empty = await call(app, 'POST', '/guests', { token: admin.token, headers: json, body: '' });
  assertError(empty, 400, 'VALIDATION_ERROR');
  const res = await call(app, 'POST', '/auth/logout', { token: admin.token, headers: json, body: '' });
  assert.equal(res.status, 200, JSON.stringify(res.body));
});
