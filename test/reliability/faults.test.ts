// Faults: the store or Redis going away, and SIGTERM under load. PostgreSQL and Redis are private
// instances started here (support.ts), never the machine's shared ones. Proves: PostgreSQL down →
// 503 SERVICE_UNAVAILABLE in the envelope within a second, no hang, no 500, /readyz 503, and
// recovery without a restart; Redis down → requests still served and limited in process, /readyz
// says so, recovery without a restart; SIGTERM under load → every accepted request completes,
// late ones get a 503 in the envelope, nothing acknowledged is lost, exit 0 within 10 s.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { buildTestApp, call, createStaff, freshDatabaseUrl, type Res } from '../helpers.js';
import {
  adminToken,
  idsInStore,
  namesInStore,
  privatePostgres,
  privateRedis,
  serverEnv,
  startServer,
} from './support.js';

/** The answer with how long the app took (`Res.ms`: the response check a test makes is not counted). */
const timed = (p: Promise<Res>): Promise<Res> => p;

async function until(what: string, deadlineMs: number, probe: () => Promise<boolean>): Promise<number> {
  const start = Date.now();
  while (Date.now() - start < deadlineMs) {
    if (await probe()) return Date.now() - start;
    await sleep(100);
  }
  throw new Error(`${what} did not happen within ${deadlineMs} ms`);
}

test('PostgreSQL stopped: 503 SERVICE_UNAVAILABLE before the connect timeout, /readyz 503, and recovery by itself', {
  timeout: 180_000,
}, async (t) => {
  const pgi = await privatePostgres(t);
  const app = await buildTestApp(t, { DATABASE_URL: pgi.url });
  const admin = await createStaff(app, 'admin');
  const before = await call(app, 'POST', '/guests', { token: admin.token, body: { name: 'Before the outage' } });
  assert.equal(before.status, 201);

  pgi.stop();
  // A burst of reads and writes, authenticated (the gate reads the store) and not.
  const burst = await Promise.all(
    Array.from({ length: 40 }, (_, i) =>
      timed(
        i % 4 === 0
          ? call(app, 'POST', '/guests', { token: admin.token, body: { name: `During ${i}` } })
          : i % 4 === 1
            ? call(app, 'POST', '/auth/login', { body: { email: admin.email, password: 'whatever it is' } })
            : call(app, 'GET', i % 4 === 2 ? '/guests' : `/guests/${before.data.id}`, { token: admin.token }),
      ),
    ),
  );
  for (const res of burst) {
    assert.equal(res.status, 503, res.raw.body);
    assert.equal(res.body.error.code, 'SERVICE_UNAVAILABLE');
    assert.equal(res.headers['retry-after'], '1');
    assert.ok(res.headers['x-ratelimit-remaining'] !== undefined, 'a request failing on the store is still counted');
    assert.doesNotMatch(res.raw.body, /ECONNREFUSED|postgres|127\.0\.0\.1|connect/i);
    // Refused at once, not after the 2 s connect timeout: each wave of the pool's connection
    // attempts is refused at once (the slowest of 40 waits for three waves: ~120 ms alone, ~1.1 s on
    // a machine running both stores' reliability runs side by side).
    assert.ok(res.ms < 2000, `answered in ${Math.round(res.ms)} ms`);
  }
  const ready = await timed(call(app, 'GET', '/readyz'));
  assert.equal(ready.status, 503);
  assert.equal(ready.data.store, 'unavailable');
  assert.ok(ready.ms < 1500, `/readyz took ${Math.round(ready.ms)} ms`);
  t.diagnostic(`outage: slowest of ${burst.length} answers ${Math.round(Math.max(...burst.map((r) => r.ms)))} ms`);

  pgi.start();
  const recovered = await until('recovery', 20_000, async () => {
    const res = await call(app, 'GET', '/guests', { token: admin.token });
    assert.ok(res.status === 200 || res.status === 503, `during recovery: ${res.status} ${res.raw.body}`);
    return res.status === 200;
  });
  t.diagnostic(`recovered ${recovered} ms after PostgreSQL was back`);
  assert.equal((await call(app, 'GET', '/readyz')).status, 200);
  const after = await call(app, 'POST', '/guests', { token: admin.token, body: { name: 'After the outage' } });
  assert.equal(after.status, 201);
  const list = await call(app, 'GET', '/guests', { token: admin.token });
  assert.deepEqual(list.data.map((g: { name: string }) => g.name).sort(), ['After the outage', 'Before the outage']);
});

test('Redis stopped: requests are served and limited in process, /readyz says so, and it recovers by itself', {
  timeout: 120_000,
}, async (t) => {
  const redis = await privateRedis(t);
  const prefix = `gma-fault:${randomBytes(4).toString('hex')}:`;
  const app = await buildTestApp(t, { REDIS_URL: redis.url, REDIS_KEY_PREFIX: prefix, RATE_LIMIT_STANDARD: '40' });
  const user = await createStaff(app, 'staff');
  const keys = () =>
    execFileSync('redis-cli', ['-p', String(redis.port), '--scan', '--pattern', `${prefix}*`]).toString();
  assert.equal((await call(app, 'GET', '/auth/me', { token: user.token })).status, 200);
  assert.notEqual(keys().trim(), '', 'counted in Redis while it is up');

  await redis.stop();
  const served: (Res & { ms: number })[] = [];
  for (let i = 0; i < 45; i++) served.push(await timed(call(app, 'GET', '/auth/me', { token: user.token })));
  const ok = served.filter((r) => r.status === 200);
  const limited = served.filter((r) => r.status === 429);
  assert.equal(ok.length + limited.length, served.length, served.map((r) => r.status).join(','));
  // Counting restarts in the process at the outage; the limit of 40 still holds there.
  assert.ok(ok.length >= 38 && ok.length <= 40, `${ok.length} served`);
  assert.ok(limited.length >= 5, 'the in-process limit is enforced');
  for (const r of served) {
    assert.equal(r.headers['x-ratelimit-limit'], '40');
    assert.ok(r.headers['x-ratelimit-remaining'] !== undefined && r.headers['x-ratelimit-reset'] !== undefined);
    assert.ok(r.ms < 1000, `answered in ${Math.round(r.ms)} ms`);
  }
  const ready = await timed(call(app, 'GET', '/readyz'));
  assert.equal(ready.status, 503);
  assert.deepEqual({ store: ready.data.store, redis: ready.data.redis }, { store: 'ok', redis: 'unavailable' });
  assert.ok(ready.ms < 1500);

  await redis.start();
  const back = await until('readiness', 15_000, async () => (await call(app, 'GET', '/readyz')).status === 200);
  t.diagnostic(`ready ${back} ms after Redis was back`);
  const other = await createStaff(app, 'staff');
  assert.equal((await call(app, 'GET', '/auth/me', { token: other.token })).status, 200);
  assert.notEqual(keys().trim(), '', 'counting is back in Redis (the restarted Redis was empty)');
});

interface Outcome {
  name: string;
  status: number | null;
  id?: string;
  code?: string;
  failure?: string;
  sentAt: number;
}

test('SIGTERM under load: accepted requests complete, late ones get 503 in the envelope, nothing acknowledged is lost, exit 0 within 10 s', {
  timeout: 180_000,
}, async (t) => {
  const databaseUrl = await freshDatabaseUrl(t);
  const server = await startServer(t, serverEnv(databaseUrl, { LOG_LEVEL: 'info' }));
  const token = await adminToken(server.base);
  let stop = false;
  const outcomes: Outcome[] = [];
  const worker = async (w: number) => {
    for (let i = 0; !stop; i++) {
      const sentAt = Date.now();
      const name = `Load ${w}.${i}`;
      try {
        const res = await fetch(`${server.base}/api/v1/guests`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
          body: JSON.stringify({ name, tags: ['load'] }),
        });
        const body = (await res.json()) as { data?: { id: string }; error?: { code: string } };
        outcomes.push({ name, status: res.status, id: body.data?.id, code: body.error?.code, sentAt });
        if (res.status === 503) return;
      } catch (err) {
        outcomes.push({ name, status: null, failure: String((err as { cause?: unknown }).cause ?? err), sentAt });
        return;
      }
    }
  };
  const workers = Array.from({ length: 32 }, (_, w) => worker(w));
  await sleep(1500);
  const sentAt = Date.now();
  server.child.kill('SIGTERM');
  const exit = await Promise.race([server.exited, sleep(15_000).then(() => null)]);
  stop = true;
  await Promise.all(workers);
  assert.ok(exit !== null, 'no exit within 15 s of SIGTERM');
  assert.equal(exit.signal, null);
  assert.equal(exit.code, 0, server.stderr());
  assert.ok(exit.at - sentAt < 10_000, `exit took ${exit.at - sentAt} ms`);

  const created = outcomes.filter((o) => o.status === 201);
  const late = outcomes.filter((o) => o.status === 503);
  const failed = outcomes.filter((o) => o.status === null);
  const other = outcomes.filter((o) => o.status !== null && o.status !== 201 && o.status !== 503);
  t.diagnostic(
    `${created.length} created (${created.filter((o) => o.sentAt >= sentAt).length} sent after SIGTERM), ` +
      `${late.length} × 503, ${failed.length} refused connections, exit in ${exit.at - sentAt} ms`,
  );
  assert.deepEqual(other, [], 'only 201 or 503');
  for (const o of late) assert.equal(o.code, 'SERVICE_UNAVAILABLE');
  // A request refused at the connection level (written to a kept-alive socket the draining server
  // closed while idle, or after it stopped listening) was never read: the log check below proves
  // the server answered every request it read, and none of these was stored.
  for (const o of failed) assert.match(o.failure!, /ECONNRESET|ECONNREFUSED|other side closed|SocketError/, o.failure);
  assert.ok(created.length > 20, `only ${created.length} requests under load`);

  // Every request the server accepted was answered (the log has a completion for each).
  const lines = server
    .stdout()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { reqId?: string; msg?: string; res?: { statusCode: number } });
  const incoming = new Set(lines.filter((l) => l.msg === 'incoming request').map((l) => l.reqId));
  const completed = new Map(
    lines.filter((l) => l.msg === 'request completed').map((l) => [l.reqId, l.res?.statusCode]),
  );
  const unanswered = [...incoming].filter((id) => !completed.has(id));
  assert.deepEqual(unanswered, [], 'accepted but never answered');
  assert.ok(![...completed.values()].some((s) => s !== undefined && s >= 500 && s !== 503), 'a 5xx other than 503');

  const stored = await idsInStore(databaseUrl, 'guests');
  const lost = created.filter((o) => !stored.has(o.id!));
  assert.deepEqual(lost, [], 'acknowledged but not stored');
  const names = await namesInStore(databaseUrl);
  const ghosts = failed.filter((o) => names.has(o.name));
  assert.deepEqual(ghosts, [], 'refused at the connection level, yet stored');
});
