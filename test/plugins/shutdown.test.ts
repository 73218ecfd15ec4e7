// The real server (README): it starts on a port, creates the first admin from ADMIN_EMAIL and
// ADMIN_PASSWORD on an empty store, answers over HTTP, and on SIGTERM exits 0 within 10 s.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { freshDatabaseUrl, JWT_SECRET, redisEnv, spawnNode, TEST_STORE } from '../helpers.js';

const ADMIN_PASSWORD = 'the first admin password';

/** The address the server says it listens on (PORT=0: the port the OS gave it), from its log. */
async function announcedBase(output: () => string, exited: () => boolean, timeoutMs: number): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    assert.ok(!exited(), 'the server exited during start-up');
    const m = /API on (http:\/\/127\.0\.0\.1:(\d+))\/api\/v1/.exec(output());
    if (m !== null) {
      assert.notEqual(m[2], '0', 'the log names the port actually bound');
      return m[1]!;
    }
    await sleep(100);
  }
  throw new Error(`the server did not announce its address within ${timeoutMs} ms:\n${output()}`);
}

async function waitUntilUp(base: string, exited: () => boolean, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    assert.ok(!exited(), 'the server exited during start-up');
    try {
      const res = await fetch(`${base}/healthz`);
      if (res.status === 200) return;
    } catch {
      // not listening yet
    }
    await sleep(100);
  }
  throw new Error(`the server did not answer within ${timeoutMs} ms`);
}

test('the server starts (PORT=0: on a port the OS picks, which it logs), seeds the first admin, answers, and exits 0 within 10 s of SIGTERM', async (t) => {
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    HOST: '127.0.0.1',
    PORT: '0',
    DATABASE_URL: await freshDatabaseUrl(t),
    JWT_SECRET,
    LOG_LEVEL: 'info',
    ADMIN_EMAIL: 'owner@hotel.test',
    ADMIN_PASSWORD,
  };
  const server = spawnNode('src/server.ts', [], { ...env, ...redisEnv() });
  const { child, stdout, stderr } = server;
  const exited = () => server.exit() !== null;
  t.after(() => {
    if (!exited()) child.kill('SIGKILL');
  });

  const base = await announcedBase(stdout, exited, 60_000);
  await waitUntilUp(base, exited, 10_000);

  const login = await fetch(`${base}/api/v1/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: 'owner@hotel.test', password: ADMIN_PASSWORD }),
  });
  assert.equal(login.status, 200, `${stdout()}\n${stderr()}`);
  const session = (await login.json()) as { data: { token: string; user: { role: string } } };
  assert.equal(session.data.user.role, 'admin');
  const me = await fetch(`${base}/api/v1/auth/me`, { headers: { authorization: `Bearer ${session.data.token}` } });
  assert.equal(me.status, 200);
  assert.ok(me.headers.get('x-request-id'));

  const sentAt = Date.now();
  assert.ok(child.kill('SIGTERM'));
  const done = await Promise.race([server.exited, sleep(15_000, null, { ref: false })]);
  assert.ok(done !== null, 'the server did not exit within 15 s of SIGTERM');
  assert.equal(done.signal, null, `killed by ${done.signal}`);
  assert.equal(done.code, 0, stderr());
  assert.ok(done.at - sentAt < 10_000, `exit took ${done.at - sentAt} ms`);
  assert.match(stdout(), /shutting down/);
  assert.equal(stderr().trim(), '');
  // The password was never logged.
  assert.doesNotMatch(stdout(), new RegExp(ADMIN_PASSWORD));
  await assert.rejects(fetch(`${base}/healthz`), 'nothing listens any more');
});

test('with no JWT_SECRET, a token and an API key made before a restart still work after it', async (t) => {
  if (TEST_STORE === 'postgres') return t.skip('the secret is kept beside the embedded store only');
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    HOST: '127.0.0.1',
    PORT: '0',
    DATABASE_URL: await freshDatabaseUrl(t),
    LOG_LEVEL: 'info',
    ADMIN_EMAIL: 'owner@hotel.test',
    ADMIN_PASSWORD,
  };
  const start = async () => {
    const server = spawnNode('src/server.ts', [], env);
    const exited = () => server.exit() !== null;
    t.after(() => {
      if (!exited()) server.child.kill('SIGKILL');
    });
    const base = await announcedBase(server.stdout, exited, 60_000);
    await waitUntilUp(base, exited, 10_000);
    return { server, base };
  };
  const first = await start();
  const login = await fetch(`${first.base}/api/v1/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: 'owner@hotel.test', password: ADMIN_PASSWORD }),
  });
  const token = ((await login.json()) as { data: { token: string } }).data.token;
  const made = await fetch(`${first.base}/api/v1/api-keys`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'PMS', scopes: ['guests:read'] }),
  });
  assert.equal(made.status, 201);
  const key = ((await made.json()) as { data: { key: string } }).data.key;
  first.server.child.kill('SIGTERM');
  await first.server.exited;

  const second = await start();
  const me = await fetch(`${second.base}/api/v1/auth/me`, { headers: { authorization: `Bearer ${token}` } });
  assert.equal(me.status, 200, await me.text());
  const guests = await fetch(`${second.base}/api/v1/guests`, { headers: { authorization: `Bearer ${key}` } });
  assert.equal(guests.status, 200, await guests.text());
  second.server.child.kill('SIGTERM');
  await second.server.exited;
});
