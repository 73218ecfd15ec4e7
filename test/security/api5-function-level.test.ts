// OWASP API5:2023 Broken Function Level Authorization. The routes and who may call them are read
// from the OpenAPI document, whose `x-roles` come from each route's own `config.access` (the one
// declaration the gate enforces), not from a hand-kept list: a new admin-only route is covered
// the day it is added. Every route restricted from a role is called as that role → 403, and the
// call changed nothing. Role-by-role cases per module are in test/modules/*.test.ts.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { assertError } from '../fixtures.js';
import { call } from '../helpers.js';
import { fill, operations, PROVIDER_CALLBACKS, totals, world } from './support.js';

test('every route closed to a role answers that role 403 FORBIDDEN and changes nothing', async (t) => {
  const w = await world(t);
  const ops = await operations(w.app);
  const restricted = ops.filter((o) => Array.isArray(o.roles) && o.roles.length < 3);
  const adminOnly = restricted.filter((o) => o.roles.length === 1);
  const adminManager = restricted.filter((o) => o.roles.length === 2);
  // The role rules, as a floor: the document must know at least these restrictions.
  for (const [list, name] of [
    [adminOnly, 'POST /api/v1/staff'],
    [adminOnly, 'PATCH /api/v1/staff/{id}'],
    [adminOnly, 'PUT /api/v1/settings/{key}'],
    [adminOnly, 'DELETE /api/v1/settings/{key}'],
    [adminManager, 'GET /api/v1/settings'],
    [adminManager, 'POST /api/v1/guests'],
    [adminManager, 'POST /api/v1/tasks/bulk'],
    [adminManager, 'DELETE /api/v1/knowledge/{id}'],
  ] as const) {
    assert.ok(
      list.some((o) => `${o.method} ${o.path}` === name),
      `${name} is not restricted as the contract says`,
    );
  }
  for (const o of adminOnly) assert.deepEqual(o.roles, ['admin'], `${o.method} ${o.path}`);
  for (const o of adminManager) assert.deepEqual([...o.roles].sort(), ['admin', 'manager'], `${o.method} ${o.path}`);

  const before = await totals(w);
  const ids = { id: w.own.alice.conversation, key: 'hotel' };
  let calls = 0;
  for (const o of restricted) {
    const url = fill(
      o.path,
      o.path.includes('/staff/') ? { id: w.alice.id } : o.path.includes('/knowledge/') ? {} : ids,
    );
    const callers = o.roles.includes('manager') ? [w.alice] : [w.manager, w.alice];
    for (const who of callers) {
      const body = o.method === 'GET' || o.method === 'DELETE' ? undefined : { items: [{}], value: 1, name: 'x' };
      const res = await call(w.app, o.method, url, { token: who.token, body });
      assertError(res, 403, 'FORBIDDEN', `${o.method} ${url} as ${who.role}`);
      assert.ok(res.headers['x-ratelimit-limit'], 'a refused call is still counted');
      calls++;
    }
  }
  assert.ok(calls >= 15, `only ${calls} calls`);
  assert.deepEqual(await totals(w), before);
});

test('every route but login, the probes and the document answers 401 without a token', async (t) => {
  // The token matrix itself (forged, expired, revoked …) is test/auth/jwt.test.ts.
  const w = await world(t);
  const ops = await operations(w.app);
  const open = ops.filter((o) => o.roles === 'public').map((o) => `${o.method} ${o.path}`);
  assert.deepEqual(open.sort(), ['GET /healthz', 'GET /readyz', 'POST /api/v1/auth/login']);
  // Provider callbacks are public to the token scheme and closed by their own proof instead.
  const callbacks = (await operations(w.app, { providers: true })).filter((o) => o.roles === 'public');
  assert.deepEqual(
    callbacks
      .map((o) => `${o.method} ${o.path}`)
      .filter((n) => !open.includes(n))
      .sort(),
    [...PROVIDER_CALLBACKS].sort(),
  );
  for (const o of callbacks.filter((c) => PROVIDER_CALLBACKS.includes(`${c.method} ${c.path}`))) {
    const res = await call(w.app, o.method, o.path, { body: o.method === 'POST' ? {} : undefined });
    assertError(res, 403, 'FORBIDDEN', `${o.method} ${o.path} without its signature`);
  }
  for (const o of ops.filter((x) => x.roles !== 'public')) {
    const res = await call(w.app, o.method, fill(o.path, { id: w.own.alice.task, key: 'hotel' }), {
      body: o.op.requestBody ? {} : undefined,
    });
    assertError(res, 401, 'TOKEN_MISSING', `${o.method} ${o.path}`);
    assert.match(String(res.headers['www-authenticate']), /^Bearer/);
  }
});
