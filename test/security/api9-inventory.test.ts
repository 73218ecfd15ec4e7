// OWASP API9:2023 Improper Inventory Management. That the documented operations are exactly the
// routes the app serves (no undocumented or shadow route, nothing documented that is gone) is
// test/openapi.test.ts ("the documented operations are exactly the routes the app serves"), and
// that every /api/v1 operation but login requires bearerAuth is there too. Here: every documented
// operation says who may call it, and only one API version is served.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp } from '../helpers.js';
import { callExact, openapi, operations } from './support.js';

test('every /api/v1 operation but login documents its roles (x-roles), from the route itself', async (t) => {
  const app = await buildTestApp(t);
  for (const o of await operations(app)) {
    if (!o.path.startsWith('/api/v1/') || o.path === '/api/v1/auth/login') continue;
    assert.ok(Array.isArray(o.roles) && o.roles.length > 0, `${o.method} ${o.path} has no x-roles`);
    for (const r of o.roles) assert.ok(['admin', 'manager', 'staff'].includes(r), `${o.method} ${o.path}: ${r}`);
  }
});

test('the document names one server and one version, and every path is under it or a probe', async (t) => {
  const app = await buildTestApp(t);
  const doc = await openapi(app);
  assert.equal(doc.servers.length, 1);
  assert.equal(doc.servers[0]['x-internal'], false);
  assert.equal(doc.info.version, '1.0.0');
  for (const path of Object.keys(doc.paths)) assert.match(path, /^\/api\/v1\/|^\/(healthz|readyz)$/);
  for (const legacy of ['/api/v0/guests', '/api/guests', '/v1/guests', '/guests']) {
    assert.equal((await callExact(app, 'GET', legacy)).status, 404, legacy);
  }
});
