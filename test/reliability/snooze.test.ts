// Snoozes and SLA moments across a crash: the real server on a file store or a fresh PostgreSQL
// database snoozes conversations with moments spread over a few seconds, is killed with SIGKILL
// while some have woken and others are still due (a wake-up may be mid-run), and is started again
// on the same store after every moment has passed. Each conversation must then be open, not
// snoozed, and woken by exactly one `conversation.updated` of the system (docs/jobs.md): once
// across the crash. A guest's unanswered message and a task, both due after the kill and before
// the restart, must be reported on start, once each, at_risk before breached (docs/reports.md).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { until } from '../channels/fakes.js';
import { freshDatabaseUrl, TEST_STORE } from '../helpers.js';
import { adminToken, serverEnv, startServer } from './support.js';

async function api(base: string, token: string, method: string, path: string, body?: unknown) {
  const res = await fetch(`${base}/api/v1${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  // biome-ignore lint/suspicious/noExplicitAny: the API's JSON, asserted on below.
  const json = (await res.json()) as any;
  return { status: res.status, data: json.data, body: json };
}

test(`snooze and SLA: SIGKILL with moments due, restart after them: each woken or reported once (${TEST_STORE})`, {
  timeout: 300_000,
}, async (t) => {
  const databaseUrl = await freshDatabaseUrl(t);
  const env = serverEnv(databaseUrl);
  let server = await startServer(t, env);
  let token = await adminToken(server.base);
  const guest = await api(server.base, token, 'POST', '/guests', { name: 'Snoozed guest' });
  assert.equal(guest.status, 201, JSON.stringify(guest.body));
  // A 3 s first response (0.05 minute) in wall time: at risk 2.4 s after the guest writes.
  const sla = {
    firstResponseMinutes: 0.05,
    businessHours: false,
    taskMinutes: { low: 60, normal: 60, high: 60, urgent: 60 },
  };
  assert.equal((await api(server.base, token, 'PUT', '/settings/sla', { value: sla })).status, 200);
  const waiting = await api(server.base, token, 'POST', '/guests', { name: 'Waiting guest' });
  assert.equal(waiting.status, 201, JSON.stringify(waiting.body));
  const ids: string[] = [];
  const start = Date.now();
  for (let i = 0; i < 12; i++) {
    const c = await api(server.base, token, 'POST', '/conversations', { guestId: guest.data.id, channel: 'web' });
    assert.equal(c.status, 201, JSON.stringify(c.body));
    // Due from 2 s to 4.2 s after the first: the kill at ~3 s leaves about half still due.
    const snoozedUntil = new Date(start + 2000 + i * 200).toISOString();
    const s = await api(server.base, token, 'PATCH', `/conversations/${c.data.id}`, {
      status: 'pending',
      snoozedUntil,
    });
    assert.equal(s.status, 200, JSON.stringify(s.body));
    ids.push(c.data.id);
  }
  // The SLA writes at least 0.7 s in, so their first moment (2.4 s later) falls after the kill.
  await sleep(Math.max(0, start + 700 - Date.now()));
  const wrote = await api(server.base, token, 'POST', '/channels/web/inbound', {
    guestId: waiting.data.id,
    content: 'Anyone there?',
    externalId: 'sla-crash',
  });
  assert.equal(wrote.status, 201, JSON.stringify(wrote.body));
  const writtenAt = Date.parse(wrote.data.message.createdAt);
  const task = await api(server.base, token, 'POST', '/tasks', {
    title: 'Extra pillow',
    department: 'housekeeping',
    dueAt: new Date(writtenAt + 2700).toISOString(),
  });
  assert.equal(task.status, 201, JSON.stringify(task.body));
  await sleep(Math.max(0, start + 3000 - Date.now()));
  const killedAt = Date.now();
  server.child.kill('SIGKILL');
  assert.equal((await server.exited).signal, 'SIGKILL');
  assert.ok(killedAt < writtenAt + 2400, `killed ${killedAt - writtenAt} ms after the guest wrote: after a moment`);
  await sleep(Math.max(0, start + 5000 - Date.now(), writtenAt + 3300 - Date.now()));

  const restartedAt = Date.now();
  server = await startServer(t, env);
  const listening = Date.now();
  token = await adminToken(server.base);
  for (const id of ids) {
    await until(`${id} is open after the restart`, async () => {
      const got = await api(server.base, token, 'GET', `/conversations/${id}`);
      return got.data.status === 'open' && got.data.snoozedUntil === null;
    });
  }
  t.diagnostic(
    `every conversation open ${Date.now() - listening} ms after the restarted server answered ` +
      `(${listening - restartedAt} ms to start it)`,
  );
  await sleep(500);
  const feed = await api(server.base, token, 'GET', '/events?types=conversation.updated&limit=100');
  assert.equal(feed.status, 200);
  for (const id of ids) {
    // biome-ignore lint/suspicious/noExplicitAny: the feed's JSON.
    const wakes = feed.data.filter((e: any) => e.data.id === id && e.actor.type === 'system');
    assert.equal(wakes.length, 1, `${id} woken ${wakes.length} times`);
  }

  let reported: { type: string; occurredAt: string; data: unknown }[] = [];
  await until('the SLA moments missed while down are reported', async () => {
    const got = await api(server.base, token, 'GET', '/events?types=sla.at_risk,sla.breached,task.overdue&limit=100');
    reported = got.data;
    return reported.length >= 3;
  });
  await sleep(500);
  reported = (await api(server.base, token, 'GET', '/events?types=sla.at_risk,sla.breached,task.overdue&limit=100'))
    .data;
  const dueAt = new Date(writtenAt + 3000).toISOString();
  const conversationId = wrote.data.conversationId;
  // The conversation's two moments in one run, in the order they fell; the task's in its own.
  assert.deepEqual(
    reported.filter((e) => e.type !== 'task.overdue').map((e) => [e.type, e.data]),
    [
      ['sla.at_risk', { conversationId, target: 'first_response', dueAt }],
      ['sla.breached', { conversationId, target: 'first_response', dueAt }],
    ],
  );
  assert.deepEqual(
    reported.filter((e) => e.type === 'task.overdue').map((e) => e.data),
    [{ taskId: task.data.id, deadline: task.data.dueAt }],
  );
  for (const e of reported) assert.ok(Date.parse(e.occurredAt) >= restartedAt, `${e.type} written before the restart`);
});
