// request.log is made lazily (src/lib/request-logger.ts): these tests check that what it writes is
// what pino's per-request child wrote: every line of a request carries its reqId (the
// X-Request-Id answered), levels below LOG_LEVEL write nothing, and the redaction still applies.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { appWithLog } from '../helpers.js';

test('at info, a request logs its start and end, both with the reqId it was answered with', async (t) => {
  const { app, lines } = await appWithLog(t, 'info');
  const res = await app.inject({ method: 'GET', url: '/healthz', headers: { 'x-request-id': 'trace-me-1' } });
  assert.equal(res.statusCode, 200);
  assert.equal(res.headers['x-request-id'], 'trace-me-1');
  const mine = lines.filter((l) => l.reqId === 'trace-me-1');
  assert.deepEqual(
    mine.map((l) => l.msg),
    ['incoming request', 'request completed'],
  );
});

test('at warn, a request that goes well writes nothing; one that fails writes its error with its reqId', async (t) => {
  const { app, lines } = await appWithLog(t, 'warn');
  const before = lines.length;
  assert.equal((await app.inject({ method: 'GET', url: '/healthz' })).statusCode, 200);
  assert.equal(lines.length, before, 'nothing below warn is written');

  // The store goes away: the request is answered 503 (or 500) and its error logged with its reqId.
  await app.ctx.store.close();
  const res = await app.inject({
    method: 'POST',
    url: '/api/v1/auth/login',
    headers: { 'x-request-id': 'trace-me-2', 'content-type': 'application/json' },
    payload: JSON.stringify({ email: 'nobody@hotel.test', password: 'not the password 123' }),
  });
  assert.ok(res.statusCode >= 500, res.body);
  const errors = lines.filter((l) => l.reqId === 'trace-me-2' && l.level >= 50);
  assert.ok(errors.length >= 1, JSON.stringify(lines.slice(before)));
  assert.doesNotMatch(JSON.stringify(errors), /not the password/);
});

test('a secret in the query string (the WhatsApp verify token) never reaches the log', async (t) => {
  const token = 'verify-token-6f1c2e9a';
  const { app, lines } = await appWithLog(t, 'info', { WHATSAPP_VERIFY_TOKEN: token });
  const path = '/api/v1/channels/whatsapp/webhook';
  const cases = [
    [`${path}?hub.mode=subscribe&hub.verify_token=${token}&hub.challenge=42`, 200],
    [`${path}?hub.mode=subscribe&hub%2Everify_token=${token}&hub.challenge=42`, 200],
    [`${path}?hub.mode=subscribe&hub.verify_token=guess-${token}&hub.challenge=42`, 403],
    [`${path}?hub.mode=subscribe&hub.verify_token=x&hub.challenge=42`, 403],
    [`/api/v1/no-such-route?access_token=${token}`, 404],
  ] as const;
  for (const [url, status] of cases) {
    const res = await app.inject({ method: 'GET', url, headers: { 'x-request-id': `verify-${status}` } });
    assert.equal(res.statusCode, status, `${url}: ${res.body}`);
  }
  const logged = JSON.stringify(lines);
  assert.doesNotMatch(logged, new RegExp(token));
  const urls = lines.filter((l) => l.msg === 'incoming request').map((l) => (l.req as { url: string }).url);
  assert.equal(urls.length, cases.length, logged);
  assert.ok(
    urls.every((u) => u.includes('verify_token=[redacted]') || u.includes('access_token=[redacted]')),
    logged,
  );
  assert.ok(urls[0]!.includes('hub.mode=subscribe&hub.verify_token=[redacted]&hub.challenge=42'), urls[0]);
});
