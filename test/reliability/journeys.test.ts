// Journey steps across a crash: the real server on a file store or a fresh PostgreSQL database plans
// an arrival step for several stays at the start of a coming minute (the hotel's check-in time), is
// killed with SIGKILL before that moment and started again on the same store. Each step must then
// run on time (at most 5 s after its moment, counted from when the server answered if it came back
// later) and exactly once: one system message per stay, one `journey.step_done` each
// (docs/stays.md, Journeys; docs/jobs.md).
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

const STAYS = 8;

test(`journeys: SIGKILL before an arrival step, restart: each step runs once, on time (${TEST_STORE})`, {
  timeout: 300_000,
}, async (t) => {
  const databaseUrl = await freshDatabaseUrl(t);
  const env = serverEnv(databaseUrl);
  let server = await startServer(t, env);
  let token = await adminToken(server.base);

  // The arrival moment: the start of a minute at least 25 s away, so the set-up, the kill and the
  // restart all happen before it.
  let moment = Math.ceil(Date.now() / 60_000) * 60_000;
  if (moment - Date.now() < 25_000) moment += 60_000;
  const at = new Date(moment).toISOString();
  const hotel = await api(server.base, token, 'PUT', '/settings/hotel', {
    value: { name: 'Casa Azul', timezone: 'UTC', locale: 'en', checkInTime: at.slice(11, 16) },
  });
  assert.equal(hotel.status, 200, JSON.stringify(hotel.body));
  const journeys = await api(server.base, token, 'PUT', '/settings/journeys', {
    value: [
      {
        name: 'arrival',
        when: { event: 'arrival' },
        channel: 'sms',
        action: { type: 'message', content: 'Welcome {{guest.firstName}}, room {{stay.room}} is ready' },
      },
    ],
  });
  assert.equal(journeys.status, 200, JSON.stringify(journeys.body));
  const guest = await api(server.base, token, 'POST', '/guests', { name: 'Marta Arrival', phone: '+15550001234' });
  assert.equal(guest.status, 201, JSON.stringify(guest.body));
  const checkOut = new Date(moment + 2 * 86_400_000).toISOString().slice(0, 10);
  const stays: string[] = [];
  for (let i = 0; i < STAYS; i++) {
    const s = await api(server.base, token, 'POST', '/stays', {
      guestId: guest.data.id,
      room: String(100 + i),
      checkIn: at.slice(0, 10),
      checkOut,
    });
    assert.equal(s.status, 201, JSON.stringify(s.body));
    stays.push(s.data.id);
  }
  const planned = await api(server.base, token, 'GET', `/stays/${stays[0]}/journey`);
  assert.deepEqual(
    planned.data.map((s: { dueAt: string; status: string }) => [s.dueAt, s.status]),
    [[at, 'scheduled']],
  );

  await sleep(Math.max(0, moment - 12_000 - Date.now()));
  server.child.kill('SIGKILL');
  assert.equal((await server.exited).signal, 'SIGKILL');
  server = await startServer(t, env);
  const listening = Date.now();
  token = await adminToken(server.base);

  // biome-ignore lint/suspicious/noExplicitAny: the API's JSON.
  const steps: any[] = [];
  for (const id of stays) {
    await until(`the arrival step of ${id} ran`, async () => {
      const got = await api(server.base, token, 'GET', `/stays/${id}/journey`);
      return got.data[0]?.status !== 'scheduled';
    });
    steps.push((await api(server.base, token, 'GET', `/stays/${id}/journey`)).data[0]);
  }
  const allowed = Math.max(5000, listening - moment + 5000);
  for (const step of steps) assert.equal(step.status, 'done', JSON.stringify(step));
  await sleep(1000);
  const conversations = await api(server.base, token, 'GET', '/conversations');
  assert.equal(conversations.data.length, 1, 'one sms conversation for the guest');
  const messages = await api(
    server.base,
    token,
    'GET',
    `/conversations/${conversations.data[0].id}/messages?limit=100`,
  );
  // biome-ignore lint/suspicious/noExplicitAny: the API's JSON.
  const sent = messages.data.filter((m: any) => m.sender.type === 'system');
  assert.equal(sent.length, STAYS, `${sent.length} messages for ${STAYS} stays`);
  assert.deepEqual(
    // biome-ignore lint/suspicious/noExplicitAny: the API's JSON.
    sent.map((m: any) => m.id).sort(),
    steps.map((s) => s.messageId).sort(),
  );
  // biome-ignore lint/suspicious/noExplicitAny: the API's JSON.
  const late = sent.map((m: any) => Date.parse(m.createdAt) - moment);
  t.diagnostic(
    `sent ${Math.min(...late)}–${Math.max(...late)} ms after the moment (restart answered ${listening - moment} ms)`,
  );
  for (const ms of late) assert.ok(ms >= 0 && ms <= allowed, `sent ${ms} ms after its moment (allowed ${allowed})`);
  const done = await api(server.base, token, 'GET', '/events?types=journey.step_done&limit=100');
  assert.equal(done.data.length, STAYS, 'one journey.step_done per stay');
});
