// Slow and idle clients on a real port, with short timeouts set by env: a request whose headers or
// body never finish is dropped with a 408 in the envelope, an idle kept-alive socket is closed,
// connections above MAX_CONNECTIONS are refused at once, and a fresh client is served meanwhile.
// A live event stream is a response, not a request: none of these timeouts ends it.
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance } from 'fastify';
import { buildTestApp, call, createStaff } from '../helpers.js';
import { openStream } from '../modules/stream-helpers.js';

const SHORT = { REQUEST_HEADERS_TIMEOUT_MS: '300', REQUEST_TIMEOUT_MS: '600', KEEP_ALIVE_TIMEOUT_MS: '300' };

async function listenPort(app: FastifyInstance): Promise<number> {
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address();
  assert.ok(address && typeof address === 'object');
  return address.port;
}

interface RawClient {
  socket: Socket;
  /** Everything received so far. */
  text(): string;
  /** Resolves with everything received once the server closes the connection. */
  closed: Promise<string>;
}

/** A raw TCP client that sends exactly what it is told, when it is told. */
async function raw(port: number): Promise<RawClient> {
  const socket = connect(port, '127.0.0.1');
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  let received = '';
  socket.setEncoding('utf8');
  socket.on('data', (c: string) => {
    received += c;
  });
  const closed = new Promise<string>((resolve) => {
    socket.on('close', () => resolve(received));
    socket.on('error', () => {});
  });
  return { socket, text: () => received, closed };
}

/** GET /healthz on a new connection; resolves with the status. */
function fresh(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ port, host: '127.0.0.1', path: '/healthz', agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}

function assert408(text: string) {
  assert.match(text, /^HTTP\/1\.1 408 /, text);
  const body = JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4));
  assert.deepEqual(body.success, false);
  assert.equal(body.error.code, 'REQUEST_TIMEOUT');
}

test('headers that never finish are dropped with a 408 while fresh clients are served', async (t) => {
  const app = await buildTestApp(t, SHORT);
  const port = await listenPort(app);
  // Slowloris: half a request, then one more header byte now and then, never the blank line.
  const slow = await Promise.all([raw(port), raw(port), raw(port)]);
  for (const c of slow) c.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ');
  const drip = setInterval(() => {
    for (const c of slow) if (!c.socket.destroyed) c.socket.write('a');
  }, 50);
  t.after(() => clearInterval(drip));

  assert.equal(await fresh(port), 200, 'a fresh client is served while the slow ones hang');
  for (const c of slow) assert408(await c.closed);
  assert.equal(await fresh(port), 200);
});

test('a body that never finishes is dropped with a 408', async (t) => {
  const app = await buildTestApp(t, SHORT);
  const port = await listenPort(app);
  const c = await raw(port);
  c.socket.write(
    'POST /api/v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"email":',
  );
  assert.equal(await fresh(port), 200, 'a fresh client is served while the body hangs');
  assert408(await c.closed);
});

test('an idle kept-alive connection is closed after KEEP_ALIVE_TIMEOUT_MS', async (t) => {
  const app = await buildTestApp(t, SHORT);
  const port = await listenPort(app);
  const c = await raw(port);
  c.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
  const all = await c.closed;
  // One whole answer, kept alive, then closed by the server without a second request.
  assert.match(all, /^HTTP\/1\.1 200 /);
  assert.match(all, /keep-alive/i);
  assert.equal(all.match(/HTTP\/1\.1/g)?.length, 1);
  assert.equal(await fresh(port), 200);
});

test('connections above MAX_CONNECTIONS are refused at once; those open are still served', async (t) => {
  const app = await buildTestApp(t, { MAX_CONNECTIONS: '3' });
  const port = await listenPort(app);
  const open = await Promise.all([raw(port), raw(port), raw(port)]);
  // Each connection answered once, so the server has surely counted all three.
  for (const c of open) c.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
  for (const c of open) while (!/\r\n\r\n/.test(c.text())) await sleep(5);

  const refused = await raw(port);
  assert.equal(await refused.closed, '', 'closed without an answer');
  await assert.rejects(fresh(port));

  // The open ones carry on; when one goes, a new client gets its place.
  const before = open[0]!.text().length;
  open[0]!.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
  while (open[0]!.text().length === before) await sleep(5);
  assert.match(open[0]!.text().slice(before), /^HTTP\/1\.1 200 /);
  open[1]!.socket.destroy();
  await open[1]!.closed;
  let status = 0;
  while (status !== 200) status = await fresh(port).catch(() => 0);
  for (const c of open) c.socket.destroy();
});

test('a live event stream outlives every request timeout and keeps delivering', async (t) => {
  const app = await buildTestApp(t, {
    REQUEST_HEADERS_TIMEOUT_MS: '50',
    REQUEST_TIMEOUT_MS: '100',
    KEEP_ALIVE_TIMEOUT_MS: '50',
  });
  const admin = await createStaff(app, 'admin');
  const port = await listenPort(app);
  const s = await openStream(`http://127.0.0.1:${port}/api/v1/events/stream`, admin.token);
  assert.equal(s.status, 200);
  // Many times every timeout, with nothing sent (heartbeats are 15 s apart by default).
  await sleep(1000);
  const created = await call(app, 'POST', '/guests', { token: admin.token, body: { name: 'Still here' } });
  const [e] = await s.waitFor(1);
  assert.deepEqual(e!.data.data, created.data);
  let ended = false;
  void s.ended.then(() => {
    ended = true;
  });
  await sleep(10);
  assert.equal(ended, false);
  s.close();
});
