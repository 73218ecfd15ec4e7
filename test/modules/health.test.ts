import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp, call, TEST_STORE } from '../helpers.js';

test('GET /healthz answers ok without auth', async (t) => {
  const app = await buildTestApp(t);
  const res = await call(app, 'GET', '/healthz');
  assert.equal(res.status, 200);
  assert.deepEqual(res.body, { success: true, data: { status: 'ok' } });
  assert.ok(res.headers['x-request-id']);
});

test('GET /readyz reports the store and Redis as reachable', async (t) => {
  const app = await buildTestApp(t);
  const res = await call(app, 'GET', '/readyz');
  assert.equal(res.status, 200);
  assert.equal(res.data.store, 'ok');
  assert.equal(res.data.redis, TEST_STORE === 'postgres' ? 'ok' : 'not_configured');
});

test('GET /readyz answers 503 when Redis does not answer', async (t) => {
  const app = await buildTestApp(t, { REDIS_URL: 'redis://127.0.0.1:1' });
  const res = await call(app, 'GET', '/readyz');
  assert.equal(res.status, 503);
  assert.equal(res.body.success, false);
  assert.equal(res.data.redis, 'unavailable');
});
