// Three instances on one PostgreSQL and one Redis behind HAProxy (deploy/haproxy.cfg, as
// `npm run cluster` runs it): a limit is counted across instances, a logout on one is refused at
// once on another, so is a revoked API key, each event reaches a webhook once, each text reaches the
// (fake) SMS provider once whichever instance claims it, each SLA moment is reported once and on
// time whichever instance runs its job, and a rolling restart under load (SIGTERM: /readyz 503
// while still serving for SHUTDOWN_DRAIN_MS, then close) fails no request.
// PostgreSQL + Redis only (TEST_STORE=postgres); HAProxy from Debian's packages (.ci/run installs it).
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { haproxyConfig } from '../../scripts/cluster.js';
import { fakeTwilio, twilioEnv, until } from '../channels/fakes.js';
import { freshDatabaseUrl, TEST_STORE } from '../helpers.js';
import { adminToken, freePort, type Server, serverEnv, startServer } from './support.js';

const skip =
  TEST_STORE !== 'postgres'
    ? 'several instances share PostgreSQL + Redis: runs with TEST_STORE=postgres'
    : spawnSync('haproxy', ['-v']).status !== 0
      ? 'haproxy is not installed (apt-get install -y haproxy; .ci/run does)'
      : false;

const json = (token: string) => ({ authorization: `Bearer ${token}`, 'content-type': 'application/json' });

test('three instances behind HAProxy: shared limits, logout, single delivery, a rolling restart without a failed request', {
  skip,
}, async (t) => {
  // Started before the instances, which read its address from their environment.
  const twilio = skip ? null : await fakeTwilio(t);
  const env = serverEnv(await freshDatabaseUrl(t), {
    ...(twilio ? twilioEnv(twilio) : {}),
    CHANNEL_POLL_INTERVAL_MS: '200',
    TRUST_PROXY: 'true',
    SHUTDOWN_DRAIN_MS: '3000',
    RATE_LIMIT_BULK: '4',
    WEBHOOK_ALLOW_PRIVATE: 'true',
    EVENT_POLL_INTERVAL_MS: '200',
    REDIS_KEY_PREFIX: `gma-test:${randomBytes(6).toString('hex')}:`,
  });
  const ports = [await freePort(), await freePort(), await freePort()];
  // The first instance migrates the store; the others start on it.
  const servers: Server[] = [await startServer(t, env, 60_000, ports[0])];
  servers.push(...(await Promise.all(ports.slice(1).map((p) => startServer(t, env, 60_000, p)))));

  const front = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'gma-haproxy-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'haproxy.cfg'), haproxyConfig(front, ports));
  const proxy = spawn('haproxy', ['-db', '-f', join(dir, 'haproxy.cfg')], { stdio: ['ignore', 'ignore', 'pipe'] });
  let proxyLog = '';
  proxy.stderr.on('data', (d) => {
    proxyLog += d;
  });
  t.after(() => {
    proxy.kill('SIGKILL');
  });
  const lb = `http://127.0.0.1:${front}`;
  // HAProxy marks a server up after two good checks, one a second.
  for (let i = 0; ; i++) {
    const up = await fetch(`${lb}/readyz`).then(
      (r) => r.status === 200,
      () => false,
    );
    if (up) break;
    assert.ok(i < 100, `HAProxy did not come up: ${proxyLog}`);
    await sleep(100);
  }
  await sleep(2500);
  const token = await adminToken(lb);

  await t.test('a limit is counted across instances', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) {
      const res = await fetch(`${lb}/api/v1/guests/bulk`, {
        method: 'POST',
        headers: json(token),
        body: JSON.stringify({ items: [{ name: `Bulk ${i}` }] }),
      });
      statuses.push(res.status);
    }
    // Round robin spread these over three instances; the bucket of 4 is still one bucket.
    assert.deepEqual(statuses, [200, 200, 200, 200, 429, 429]);
  });

  await t.test('a logout on one instance is refused at once on the others', async () => {
    const login = await fetch(`${servers[0]!.base}/api/v1/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'owner@hotel.test', password: 'the first admin password' }),
    });
    const session = ((await login.json()) as { data: { token: string } }).data.token;
    assert.equal((await fetch(`${servers[2]!.base}/api/v1/auth/me`, { headers: json(session) })).status, 200);
    const out = await fetch(`${servers[1]!.base}/api/v1/auth/logout`, {
      method: 'POST',
      headers: json(session),
      body: '{}',
    });
    assert.equal(out.status, 200);
    const after = await fetch(`${servers[2]!.base}/api/v1/auth/me`, { headers: json(session) });
    assert.equal(after.status, 401);
    assert.equal(((await after.json()) as { error: { code: string } }).error.code, 'TOKEN_INVALID');
  });

  await t.test('an API key revoked on one instance is refused at once on the others', async () => {
    const made = await fetch(`${servers[0]!.base}/api/v1/api-keys`, {
      method: 'POST',
      headers: json(token),
      body: JSON.stringify({ name: 'PMS sync', scopes: ['guests:read'] }),
    });
    assert.equal(made.status, 201);
    const key = ((await made.json()) as { data: { id: string; key: string } }).data;
    assert.equal((await fetch(`${servers[1]!.base}/api/v1/guests`, { headers: json(key.key) })).status, 200);
    const revoked = await fetch(`${servers[2]!.base}/api/v1/api-keys/${key.id}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${token}` },
    });
    assert.equal(revoked.status, 200);
    for (const server of servers) {
      const res = await fetch(`${server.base}/api/v1/guests`, { headers: json(key.key) });
      assert.equal(res.status, 401, server.base);
      assert.equal(((await res.json()) as { error: { code: string } }).error.code, 'TOKEN_INVALID');
    }
  });

  await t.test('each text reaches the provider once, in order, whichever instance claims it', async () => {
    const guest = await fetch(`${lb}/api/v1/guests`, {
      method: 'POST',
      headers: json(token),
      body: JSON.stringify({ name: 'Texted Guest', phone: '+447700900555' }),
    });
    const guestId = ((await guest.json()) as { data: { id: string } }).data.id;
    const conv = await fetch(`${lb}/api/v1/conversations`, {
      method: 'POST',
      headers: json(token),
      body: JSON.stringify({ guestId, channel: 'sms' }),
    });
    const conversationId = ((await conv.json()) as { data: { id: string } }).data.id;
    // Round robin: the texts are written by all three instances, and every dispatcher competes.
    for (let i = 0; i < 9; i++) {
      const res = await fetch(`${lb}/api/v1/conversations/${conversationId}/messages`, {
        method: 'POST',
        headers: json(token),
        body: JSON.stringify({ content: `Text ${i}` }),
      });
      assert.equal(res.status, 201);
    }
    await until('nine texts accepted by the provider', () => twilio!.accepted.length >= 9, 3000);
    // Time for a duplicate to show, if any instance were to send one.
    await sleep(1500);
    assert.deepEqual(
      twilio!.accepted.map((m) => m.form.Body),
      Array.from({ length: 9 }, (_, i) => `Text ${i}`),
    );
    const list = await fetch(`${lb}/api/v1/conversations/${conversationId}/messages?limit=20`, {
      headers: json(token),
    });
    const statuses = ((await list.json()) as { data: { deliveryStatus: string }[] }).data.map((m) => m.deliveryStatus);
    assert.deepEqual(statuses, Array(9).fill('sent'));
  });

  await t.test('each SLA moment is reported once, on time, whichever instance runs it', async () => {
    // A 3 s first response (0.05 minute) and 3 s tasks, in wall time.
    const sla = {
      firstResponseMinutes: 0.05,
      businessHours: false,
      taskMinutes: { low: 0.05, normal: 0.05, high: 0.05, urgent: 0.05 },
    };
    const set = await fetch(`${lb}/api/v1/settings/sla`, {
      method: 'PUT',
      headers: json(token),
      body: JSON.stringify({ value: sla }),
    });
    assert.equal(set.status, 200);
    const post = async (path: string, body: unknown) => {
      const res = await fetch(`${lb}/api/v1${path}`, {
        method: 'POST',
        headers: json(token),
        body: JSON.stringify(body),
      });
      assert.equal(res.status, 201, path);
      return ((await res.json()) as { data: Record<string, string> & { message: { createdAt: string } } }).data;
    };
    // Round robin: each instance writes some of the jobs, and every instance's runner competes.
    const dueAt = new Map<string, number>();
    for (let i = 0; i < 3; i++) {
      const guest = await post('/guests', { name: `Waiting ${i}` });
      const wrote = await post('/channels/web/inbound', {
        guestId: guest.id,
        content: 'Hello?',
        externalId: `sla-${i}`,
      });
      dueAt.set(wrote.conversationId!, Date.parse(wrote.message.createdAt) + 3000);
      const task = await post('/tasks', { title: `Towels ${i}`, department: 'housekeeping' });
      dueAt.set(task.id!, Date.parse(task.deadline!));
    }
    const feed = async () => {
      const res = await fetch(`${lb}/api/v1/events?types=sla.at_risk,sla.breached,task.overdue&limit=100`, {
        headers: json(token),
      });
      return ((await res.json()) as { data: { type: string; occurredAt: string; data: Record<string, string> }[] })
        .data;
    };
    for (let i = 0; (await feed()).length < 9 && i < 150; i++) await sleep(100);
    // Time for a duplicate to show, if any instance were to write one.
    await sleep(1500);
    const events = await feed();
    const seen = events.map((e) => `${e.type} ${e.data.conversationId ?? e.data.taskId}`);
    assert.equal(events.length, 9, JSON.stringify(seen));
    assert.equal(new Set(seen).size, 9, 'each once');
    let latest = 0;
    for (const e of events) {
      const due = dueAt.get(e.data.conversationId ?? e.data.taskId!)!;
      const moment = e.type === 'sla.at_risk' ? due - 600 : due;
      const late = Date.parse(e.occurredAt) - moment;
      latest = Math.max(latest, late);
      assert.ok(late >= 0 && late <= 5000, `${e.type} written ${late} ms after its moment`);
    }
    t.diagnostic(`SLA events written at most ${latest} ms after their moment`);
  });

  await t.test('each event reaches a webhook once, whichever instance wrote it', async () => {
    const received: { id: string; event: string }[] = [];
    const receiver = createServer((req, res) => {
      let body = '';
      req.on('data', (d) => {
        body += d;
      });
      req.on('end', () => {
        received.push({ id: String(req.headers['webhook-id']), event: JSON.parse(body).event.id });
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    t.after(() => receiver.close());
    const url = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hook`;
    const hook = await fetch(`${lb}/api/v1/webhooks`, {
      method: 'POST',
      headers: json(token),
      body: JSON.stringify({ url, events: ['guest.created'] }),
    });
    assert.equal(hook.status, 201);
    for (let i = 0; i < 9; i++) {
      const res = await fetch(`${lb}/api/v1/guests`, {
        method: 'POST',
        headers: json(token),
        body: JSON.stringify({ name: `Hooked ${i}` }),
      });
      assert.equal(res.status, 201);
    }
    for (let i = 0; received.length < 9 && i < 300; i++) await sleep(100);
    // Time for a duplicate to show, if any instance were to send one.
    await sleep(1500);
    assert.equal(received.length, 9, JSON.stringify(received));
    assert.equal(new Set(received.map((r) => r.id)).size, 9, 'each delivery once');
    assert.equal(new Set(received.map((r) => r.event)).size, 9, 'each event once');
  });

  await t.test('a rolling restart under load fails no request', async () => {
    let running = true;
    const failures: string[] = [];
    let done = 0;
    const worker = async (n: number) => {
      for (let i = 0; running; i++) {
        try {
          const res =
            i % 4 === 0
              ? await fetch(`${lb}/api/v1/guests`, {
                  method: 'POST',
                  headers: json(token),
                  body: JSON.stringify({ name: `Load ${n}.${i}` }),
                })
              : await fetch(`${lb}/api/v1/conversations?limit=5`, { headers: json(token) });
          await res.arrayBuffer();
          if (res.status >= 300) failures.push(`${res.status} ${res.headers.get('x-request-id')}`);
        } catch (err) {
          failures.push(String((err as Error).cause ?? err));
        }
        done++;
      }
    };
    const load = Promise.all([0, 1, 2, 3].map(worker));
    for (const [i, server] of servers.entries()) {
      server.child.kill('SIGTERM');
      const exit = await server.exited;
      assert.equal(exit.code, 0, server.stderr());
      servers[i] = await startServer(t, env, 60_000, ports[i]);
      // Back in rotation after two good health checks.
      await sleep(2500);
    }
    running = false;
    await load;
    assert.ok(done > 50, `only ${done} requests made`);
    assert.deepEqual(failures, [], `${failures.length} of ${done} requests failed`);
  });
});
