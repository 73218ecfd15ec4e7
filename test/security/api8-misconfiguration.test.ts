// OWASP API8:2023 Security Misconfiguration: errors say what went wrong and nothing about how the
// service is built. A forced 500 hiding its SQL is test/plugins/errors.test.ts ("a 500 hides
// internals"), as are the basic 404/405/413/415 cases; here: a sweep of hostile requests over
// every route, unknown paths that look like API paths, and headers.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { assertError } from '../fixtures.js';
import { call } from '../helpers.js';
import { CODES, callExact, fill, INTERNALS, operations, world } from './support.js';

test('unknown paths are a JSON 404 NOT_FOUND in the envelope, with or without a token', async (t) => {
  const w = await world(t);
  const paths = [
    '/',
    '/api',
    '/api/',
    '/api/v1',
    '/api/v2/x',
    '/api/v0/staff',
    '/API/V1/STAFF',
    '/api/v1/admin',
    '/api/v1/staff/x/y',
    '/api/v1/../../etc/passwd',
    '/.env',
    '/.git/config',
    '/server-status',
    '/api/v1/openapi.yaml',
    '/favicon.png',
  ];
  for (const path of paths) {
    for (const token of [undefined, w.admin.token]) {
      const res = await callExact(w.app, 'GET', path, token);
      assertError(res, 404, 'NOT_FOUND', path);
      assert.doesNotMatch(res.raw.body, INTERNALS, path);
    }
  }
});

test('no error response from any route leaks a stack trace, SQL, a file path or a framework code', async (t) => {
  const w = await world(t);
  const hostileIds = [
    "' OR 1=1 --",
    '../../etc/passwd',
    '%ff',
    'stf_"; drop table staff; --',
    '$' + '{7*7}',
    '<script>',
  ];
  const hostileBodies = ['{"a":', '[]', '"str"', 'null', '{"__proto__":{"x":1}}', '{"name":{"$gt":""}}', '1e999'];
  let seen = 0;
  for (const o of await operations(w.app)) {
    // Every hostile id with the first hostile body, every hostile body with the first id, as admin;
    // and one of each as a staff member (refused earlier, by role or ownership).
    const bodies = o.op.requestBody ? hostileBodies : [undefined];
    const cases: [string, string | undefined, string][] = [
      ...hostileIds.map((id): [string, string | undefined, string] => [id, bodies[0], w.admin.token]),
      ...bodies.slice(1).map((body): [string, string | undefined, string] => [hostileIds[0]!, body, w.admin.token]),
      [hostileIds[1]!, bodies[0], w.alice.token],
    ];
    for (const [id, body, token] of cases) {
      const url = fill(o.path, { id, key: id });
      const res = await call(w.app, o.method, url, { token, body });
      assert.ok(res.status < 500, `${o.method} ${url} ${body}: ${res.status} ${res.raw.body}`);
      assert.doesNotMatch(res.raw.body, INTERNALS, `${o.method} ${url} ${body}`);
      if (res.status >= 400) assert.ok(CODES.has(res.body.error.code), res.raw.body);
      assert.equal(res.headers['x-powered-by'], undefined);
      seen++;
    }
  }
  assert.ok(seen > 300, `only ${seen} requests`);
});

test('responses name no server software, and JSON is served as JSON', async (t) => {
  // X-Powered-By on a few routes: test/plugins/errors.test.ts; here every documented GET.
  const w = await world(t);
  for (const o of (await operations(w.app)).filter((x) => x.method === 'GET')) {
    const res = await call(w.app, 'GET', fill(o.path, { id: w.own.alice.guest, key: 'hotel' }), {
      token: w.admin.token,
    });
    assert.equal(res.headers['x-powered-by'], undefined, o.path);
    assert.equal(res.headers.server, undefined, o.path);
    assert.match(String(res.headers['content-type']), /^application\/json; charset=utf-8/, o.path);
  }
});

test('TRACE and other unrouted methods are refused in the envelope; nothing is echoed back', async (t) => {
  const w = await world(t);
  for (const method of ['TRACE', 'OPTIONS', 'PROPFIND', 'CONNECT']) {
    const res = await w.app.inject({
      method: method as 'GET',
      url: '/api/v1/guests',
      headers: { authorization: `Bearer ${w.admin.token}`, 'x-secret': 'echo-me' },
    });
    assert.ok([404, 405].includes(res.statusCode), `${method}: ${res.statusCode}`);
    assert.doesNotMatch(res.body, /echo-me|Bearer/);
    if (res.body !== '') assert.equal(JSON.parse(res.body).success, false, method);
  }
});
