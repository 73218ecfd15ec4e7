// Tests the operations endpoints through HTTP: /metrics in Prometheus text behind METRICS_TOKEN
// (absent without it), and CORS for the origins in CORS_ORIGINS only, on errors too.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FAST_CHANNELS, fakeTwilio, twilioEnv, until } from '../channels/fakes.js';
import { buildTestApp, call, createStaff } from '../helpers.js';

const TOKEN = 'metrics-token-0123456789';

test('/metrics is absent without METRICS_TOKEN', async (t) => {
  const app = await buildTestApp(t);
  const res = await call(app, 'GET', '/metrics');
  assert.equal(res.status, 404);
  assert.equal(res.body.error.code, 'NOT_FOUND');
});

test('/metrics answers Prometheus text to its bearer token and 401 otherwise', async (t) => {
  const app = await buildTestApp(t, { METRICS_TOKEN: TOKEN, RATE_LIMIT_STANDARD: '3' });
  const admin = await createStaff(app, 'admin');
  for (let i = 0; i < 4; i++) await call(app, 'GET', '/conversations', { token: admin.token });
  const missing = await call(app, 'GET', '/metrics');
  assert.equal(missing.status, 401);
  assert.equal(missing.body.error.code, 'TOKEN_MISSING');
  const wrong = await call(app, 'GET', '/metrics', { headers: { authorization: `Bearer ${TOKEN}x` } });
  assert.equal(wrong.status, 401);
  assert.equal(wrong.body.error.code, 'TOKEN_INVALID');
  const res = await call(app, 'GET', '/metrics', { headers: { authorization: `Bearer ${TOKEN}` } });
  assert.equal(res.status, 200);
  assert.match(String(res.headers['content-type']), /^text\/plain; version=0\.0\.4/);
  const text = String(res.raw.body);
  assert.match(
    text,
    /http_request_duration_seconds_count\{method="GET",route="\/api\/v1\/conversations",status_code="200"\} 3/,
  );
  assert.match(
    text,
    /http_request_duration_seconds_count\{method="GET",route="\/api\/v1\/conversations",status_code="429"\} 1/,
  );
  assert.match(text, /rate_limit_refusals_total\{route="\/api\/v1\/conversations"\} 1/);
  assert.match(text, /webhook_dispatch_lag_seconds 0/);
  assert.match(text, /process_resident_memory_bytes \d+/);
});

test('CORS: a listed origin may call the API and read its headers, on errors too; another may not', async (t) => {
  const app = await buildTestApp(t, { CORS_ORIGINS: 'https://dash.example.com,http://localhost:5173' });
  const preflight = await app.inject({
    method: 'OPTIONS',
    url: '/api/v1/conversations',
    headers: {
      origin: 'https://dash.example.com',
      'access-control-request-method': 'POST',
      'access-control-request-headers': 'authorization,content-type,idempotency-key',
    },
  });
  assert.equal(preflight.statusCode, 204);
  assert.equal(preflight.headers['access-control-allow-origin'], 'https://dash.example.com');
  assert.match(String(preflight.headers['access-control-allow-methods']), /POST/);
  assert.match(String(preflight.headers['access-control-allow-headers']), /Authorization/i);

  const other = await app.inject({
    method: 'OPTIONS',
    url: '/api/v1/conversations',
    headers: { origin: 'https://evil.example.net', 'access-control-request-method': 'POST' },
  });
  assert.equal(other.headers['access-control-allow-origin'], undefined);

  // An error answer to a listed origin still carries the headers a browser needs to read it.
  const denied = await call(app, 'GET', '/conversations', { headers: { origin: 'http://localhost:5173' } });
  assert.equal(denied.status, 401);
  assert.equal(denied.headers['access-control-allow-origin'], 'http://localhost:5173');
  assert.match(String(denied.headers['access-control-expose-headers']), /X-RateLimit-Remaining/);
  const plain = await call(app, 'GET', '/conversations', { headers: { origin: 'https://evil.example.net' } });
  assert.equal(plain.headers['access-control-allow-origin'], undefined);

  // A request without Origin (a server, not a browser) gets no CORS headers, only Vary: Origin,
  // so a cache never gives a browser an answer made for no origin.
  const server = await call(app, 'GET', '/conversations');
  assert.equal(server.status, 401);
  assert.equal(server.headers['access-control-allow-origin'], undefined);
  assert.equal(server.headers['access-control-expose-headers'], undefined);
  assert.match(String(server.headers.vary), /Origin/);
  const cors = await call(app, 'GET', '/conversations', { headers: { origin: 'https://dash.example.com' } });
  assert.match(String(cors.headers.vary), /Origin/);
});

test('CORS is off by default: no CORS headers, OPTIONS is not a route', async (t) => {
  const app = await buildTestApp(t);
  const res = await app.inject({
    method: 'OPTIONS',
    url: '/api/v1/conversations',
    headers: { origin: 'https://dash.example.com', 'access-control-request-method': 'GET' },
  });
  assert.equal(res.headers['access-control-allow-origin'], undefined);
  assert.ok(res.statusCode >= 400);
});

test('/metrics counts texts by channel and outcome, and says how many wait on each channel', async (t) => {
  const twilio = await fakeTwilio(t);
  const app = await buildTestApp(t, { METRICS_TOKEN: TOKEN, ...FAST_CHANNELS, ...twilioEnv(twilio) });
  const admin = await createStaff(app, 'admin');
  const scrape = async () =>
    String((await call(app, 'GET', '/metrics', { headers: { authorization: `Bearer ${TOKEN}` } })).raw.body);
  // Declared before any text: a series per channel, none waiting.
  const before = await scrape();
  for (const channel of ['email', 'sms', 'whatsapp', 'web']) {
    assert.match(before, new RegExp(`channel_sends_waiting\\{channel="${channel}"\\} 0`), channel);
  }
  assert.match(before, /# TYPE channel_sends_total counter/);
  const guest = await call(app, 'POST', '/guests', {
    token: admin.token,
    body: { name: 'Ana', email: 'ana@example.com', phone: '+14155550123' },
  });
  const text = async (channel: string, content: string) => {
    const c = await call(app, 'POST', '/conversations', {
      token: admin.token,
      body: { guestId: guest.data.id, channel, content },
    });
    assert.equal(c.status, 201, JSON.stringify(c.body));
  };
  twilio.failNext({ status: 503 });
  await text('sms', 'Your room is ready');
  await text('web', 'Welcome');
  await text('email', 'No SMTP here'); // no provider configured: failed at once
  await until('the texts settle', async () => {
    const m = await scrape();
    return (
      /channel_sends_total\{channel="sms",outcome="sent"\} 1/.test(m) &&
      /channel_sends_total\{channel="web",outcome="sent"\} 1/.test(m) &&
      /channel_sends_total\{channel="email",outcome="failed"\} 1/.test(m)
    );
  });
  const after = await scrape();
  assert.match(after, /channel_sends_total\{channel="sms",outcome="retried"\} 1/);
  assert.doesNotMatch(after, /channel_sends_total\{[^}]*channel=""/);
  for (const line of after.split('\n').filter((l) => l.startsWith('channel_sends_waiting'))) {
    assert.match(line, /^channel_sends_waiting\{channel="(email|sms|whatsapp|web)"\} \d+$/);
  }
});
