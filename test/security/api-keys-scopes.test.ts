// The scope matrix of API keys (docs/integrations.md), like the JWT attack matrix: the routes and the scope
// each needs are read from the OpenAPI document, whose `x-scopes` come from each route's own
// `config.scope` (the declaration the gate enforces), so a new route is covered the day it is added.
// Every route × a key holding every scope but its own → 403 naming it; × a key holding only its
// scope → let through; routes with no scope → 403 for any key.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SCOPES, type Scope } from '../../src/lib/auth.js';
import { assertError } from '../fixtures.js';
import { call } from '../helpers.js';
import { fill, operations, totals, world } from './support.js';

const resourceOf = (scope: string) => scope.split(':')[0];

test('every route refuses a key without its scope (403 naming it) and lets in a key with it', async (t) => {
  const w = await world(t);
  const ops = (await operations(w.app)).filter((o) => Array.isArray(o.roles));
  const keys = new Map<string, string>();
  const keyFor = async (scopes: Scope[]) => {
    const name = scopes.join(',');
    let key = keys.get(name);
    if (key === undefined) {
      const res = await call(w.app, 'POST', '/api-keys', { token: w.admin.token, body: { name: 'matrix', scopes } });
      assert.equal(res.status, 201, res.raw.body);
      key = res.data.key as string;
      keys.set(name, key);
    }
    return key;
  };
  const scoped = ops.filter((o) => o.op['x-scopes'].length > 0);
  // The scopes docs/integrations.md names, as a floor.
  for (const [name, scope] of [
    ['GET /api/v1/guests', 'guests:read'],
    ['POST /api/v1/guests', 'guests:write'],
    ['GET /api/v1/conversations', 'conversations:read'],
    ['POST /api/v1/conversations/{id}/messages', 'conversations:write'],
    ['PUT /api/v1/settings/{key}', 'settings:write'],
    ['GET /api/v1/events', 'events:read'],
    ['POST /api/v1/webhooks', 'webhooks:write'],
  ] as const) {
    const op = scoped.find((o) => `${o.method} ${o.path}` === name);
    assert.deepEqual(op?.op['x-scopes'], [scope], name);
    assert.deepEqual(op?.op.security, [{ bearerAuth: [] }, { apiKeyAuth: [] }], `${name} security`);
    assert.match(op?.op.description, new RegExp(`API key scope: \`${scope}\``), name);
  }

  const before = await totals(w);
  const urlOf = (path: string) => fill(path, { id: w.own.alice.conversation, key: 'hotel', deliveryId: 'whd_x' });
  const bodyOf = (method: string) => (method === 'GET' || method === 'DELETE' ? undefined : { items: [{}], value: 1 });
  for (const o of ops) {
    const anyOf = o.op['x-scopes'] as Scope[];
    const [needed] = anyOf;
    const what = `${o.method} ${o.path}`;
    if (needed === undefined) {
      const res = await call(w.app, o.method, urlOf(o.path), {
        token: await keyFor([...SCOPES]),
        body: bodyOf(o.method),
      });
      assertError(res, 403, 'FORBIDDEN', `${what} with an all-scopes key`);
      continue;
    }
    // Every scope but the ones that grant it (a write scope grants the read of its resource).
    // A route some scopes each let in (an upload: conversations:write or channels:inbound) takes none of them.
    const others = SCOPES.filter((s) =>
      anyOf.every((n) => s !== n && !(n.endsWith(':read') && s === `${resourceOf(n)}:write`)),
    );
    const refused = await call(w.app, o.method, urlOf(o.path), { token: await keyFor(others), body: bodyOf(o.method) });
    assertError(refused, 403, 'FORBIDDEN', `${what} without ${needed}`);
    assert.deepEqual(refused.body.error.details, { requiredScope: needed }, what);
    assert.ok(refused.headers['x-ratelimit-limit'], 'a refused call is still counted');
  }
  assert.deepEqual(await totals(w), before, 'the refused calls changed nothing');

  for (const o of ops) {
    const [needed] = o.op['x-scopes'] as Scope[];
    if (needed === undefined) continue;
    const res = await call(w.app, o.method, urlOf(o.path), { token: await keyFor([needed]), body: bodyOf(o.method) });
    assert.ok(![401, 403].includes(res.status), `${o.method} ${o.path} with ${needed}: ${res.status} ${res.raw.body}`);
  }
  assert.ok(scoped.length >= 30, `only ${scoped.length} scoped routes`);
});
