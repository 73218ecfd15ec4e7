// Tests /reports through HTTP on the store under test: a scripted day whose every figure is known
// from the records' own times, CSV, filters, validation, and who may read reports.
import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { assertError, insertGuest } from '../fixtures.js';
import { buildTestApp, call, createStaff } from '../helpers.js';

const ms = (iso: string) => Date.parse(iso);
const secs = (a: string, b: string) => (ms(b) - ms(a)) / 1000;
const stat = (values: number[]) => {
  const s = [...values].sort((a, b) => a - b);
  const n = s.length;
  const r = (v: number) => Math.round(v * 1000) / 1000;
  return {
    count: n,
    avgSeconds: r(s.reduce((a, b) => a + b, 0) / n),
    medianSeconds: r(n % 2 === 0 ? (s[n / 2 - 1]! + s[n / 2]!) / 2 : s[(n - 1) / 2]!),
    p90Seconds: r(s[Math.ceil(0.9 * n) - 1]!),
  };
};
const NONE = { count: 0, avgSeconds: null, medianSeconds: null, p90Seconds: null };

async function setup(t: TestContext) {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const manager = await createStaff(app, 'manager');
  const agent = await createStaff(app, 'staff');
  return { app, admin, manager, agent };
}

/** A guest's web message; returns the receipt (message, conversationId). */
async function guestWrites(
  app: Awaited<ReturnType<typeof setup>>['app'],
  token: string,
  guestId: string,
  content: string,
) {
  const res = await call(app, 'POST', '/channels/web/inbound', {
    token,
    body: { guestId, content, externalId: `ext-${Math.random()}` },
  });
  assert.ok(res.status === 201 || res.status === 200, JSON.stringify(res.body));
  return res.data;
}

test('a scripted day comes out exactly as docs/reports.md defines, at once after each write', async (t) => {
  const { app, admin, manager, agent } = await setup(t);
  const begin = new Date(Date.now() - 60_000).toISOString();
  // A 6 s first-response target (0.1 minute), wall time.
  const sla = {
    firstResponseMinutes: 0.1,
    businessHours: false,
    taskMinutes: { low: 600, normal: 240, high: 60, urgent: 15 },
  };
  assert.equal((await call(app, 'PUT', '/settings/sla', { token: admin.token, body: { value: sla } })).status, 200);

  // Conversation B: a guest writes and nobody answers; its 6 s target will be breached.
  const guestB = await insertGuest(app, 'Bea');
  const inB = await guestWrites(app, manager.token, guestB, 'Is the pool open?');
  const dueB = new Date(ms(inB.message.createdAt) + 6000).toISOString();
  const b = await call(app, 'GET', `/conversations/${inB.conversationId}`, { token: manager.token });
  assert.deepEqual(b.data.sla, {
    firstResponseDueAt: dueB,
    nextResponseDueAt: null,
    resolutionDueAt: null,
    status: 'ok',
  });

  // Conversation A: the guest writes, the agent (assigned) replies 2 s later, notes, the guest
  // writes again, a reply 1.5 s later, then the agent closes it.
  const guestA = await insertGuest(app, 'Ana');
  const in1 = await guestWrites(app, manager.token, guestA, 'Hello, can I get towels?');
  const a = in1.conversationId;
  const assigned = await call(app, 'PATCH', `/conversations/${a}`, {
    token: manager.token,
    body: { assignee: agent.id },
  });
  assert.equal(assigned.status, 200);
  await sleep(2000);
  const r1 = (
    await call(app, 'POST', `/conversations/${a}/messages`, { token: agent.token, body: { content: 'On their way' } })
  ).data;
  const note = await call(app, 'POST', `/conversations/${a}/messages`, {
    token: agent.token,
    body: { content: 'room 12', type: 'note' },
  });
  assert.equal(note.status, 201);
  const in2 = await guestWrites(app, manager.token, guestA, 'And a pillow?');
  await sleep(1500);
  const r2 = (
    await call(app, 'POST', `/conversations/${a}/messages`, { token: agent.token, body: { content: 'Sure' } })
  ).data;
  const closed = (await call(app, 'PATCH', `/conversations/${a}`, { token: agent.token, body: { status: 'closed' } }))
    .data;

  // Two tasks: one done at once (well within its 240 min), one due in a second and left open.
  const t1 = (
    await call(app, 'POST', '/tasks', {
      token: manager.token,
      body: { title: 'Towels', department: 'housekeeping', assignee: agent.id, conversationId: a },
    })
  ).data;
  const done = (await call(app, 'PATCH', `/tasks/${t1.id}`, { token: agent.token, body: { status: 'completed' } }))
    .data;
  const t2 = (
    await call(app, 'POST', '/tasks', {
      token: manager.token,
      body: { title: 'Pillow', department: 'housekeeping', dueAt: new Date(Date.now() + 1000).toISOString() },
    })
  ).data;

  // Exact at once: the reply times are already there.
  const early = await call(app, 'GET', `/reports/summary?from=${begin}&businessHours=false`, { token: manager.token });
  assert.equal(early.status, 200, JSON.stringify(early.body));
  assert.equal(early.data.replyTime.count, 2);
  assert.equal(early.data.conversations.resolved, 1);

  const waitB = 6000 - (Date.now() - ms(inB.message.createdAt));
  await sleep(Math.max(waitB, 1100) + 200);
  const end = new Date(Date.now() + 60_000).toISOString();

  // The SLA state in the records, and the lists that select by it.
  const breached = await call(app, 'GET', '/conversations?sla=breached', { token: manager.token });
  assert.deepEqual(
    breached.data.map((c: { id: string; sla: unknown }) => [c.id, c.sla]),
    [
      [
        inB.conversationId,
        { firstResponseDueAt: dueB, nextResponseDueAt: null, resolutionDueAt: null, status: 'breached' },
      ],
    ],
  );
  assert.equal(breached.body.meta.total, 1);
  assert.equal((await call(app, 'GET', `/conversations/${a}`, { token: manager.token })).data.sla, null);
  assert.deepEqual((await call(app, 'GET', '/conversations?sla=at_risk', { token: manager.token })).data, []);
  const overdue = await call(app, 'GET', '/tasks?overdue=true', { token: manager.token });
  assert.deepEqual(
    overdue.data.map((x: { id: string; deadline: string }) => [x.id, x.deadline]),
    [[t2.id, t2.dueAt]],
  );
  assert.equal(overdue.body.meta.total, 1);
  assert.equal(done.deadline, new Date(ms(t1.createdAt) + 240 * 60_000).toISOString());
  assert.deepEqual(
    (await call(app, 'GET', '/tasks?overdue=false', { token: manager.token })).data.map((x: { id: string }) => x.id),
    [t1.id],
  );
  const res = await call(app, 'GET', `/reports/summary?from=${begin}&to=${end}&businessHours=false`, {
    token: manager.token,
  });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  const reply1 = secs(in1.message.createdAt, r1.createdAt);
  const reply2 = secs(in2.message.createdAt, r2.createdAt);
  assert.ok(reply1 >= 2 && reply2 >= 1.5);
  const expected = {
    from: begin,
    to: end,
    businessHours: false,
    conversations: { opened: 2, resolved: 1 },
    messages: { inbound: 3, outbound: 2 },
    firstResponse: stat([reply1]),
    replyTime: stat([reply1, reply2]),
    resolution: stat([secs(in1.message.createdAt, closed.updatedAt)]),
    tasks: { created: 2, completed: 1, overdue: 1, completion: stat([secs(t1.createdAt, done.completedAt)]) },
    sla: {
      firstResponse: { met: 1, breached: 1 },
      nextResponse: { met: 0, breached: 0 },
      resolution: { met: 0, breached: 0 },
      tasks: { met: 1, breached: 1 },
    },
  };
  const { previous, ...now } = res.data;
  assert.deepEqual({ ...now, from: begin, to: end }, { ...expected, from: begin, to: end });
  assert.equal(ms(now.from), ms(begin));
  assert.deepEqual(previous.conversations, { opened: 0, resolved: 0 });
  assert.deepEqual(previous.replyTime, NONE);
  assert.equal(ms(previous.to), ms(begin));

  // Business hours always open by default: the same times.
  const biz = await call(app, 'GET', `/reports/summary?from=${begin}&to=${end}`, { token: manager.token });
  assert.equal(biz.data.businessHours, true);
  assert.deepEqual(biz.data.replyTime, expected.replyTime);

  // The agent's figures: replies, the close (assignee after it), their task; B's are not theirs.
  const mine = await call(app, 'GET', `/reports/summary?from=${begin}&to=${end}&assignee=${agent.id}`, {
    token: manager.token,
  });
  assert.deepEqual(mine.data.replyTime, expected.replyTime);
  assert.deepEqual(mine.data.conversations, { opened: 0, resolved: 1 });
  assert.deepEqual(mine.data.messages, { inbound: 1, outbound: 2 });
  assert.deepEqual(mine.data.tasks.created, 1);
  assert.deepEqual(mine.data.sla.firstResponse, { met: 1, breached: 0 });

  // Breakdown by assignee: the agent, and no one (B, the first inbound, the unassigned task).
  const by = await call(app, 'GET', `/reports/breakdown?by=assignee&from=${begin}&to=${end}`, { token: manager.token });
  assert.equal(by.status, 200, JSON.stringify(by.body));
  const row = by.data.find((r: { key: string | null }) => r.key === agent.id);
  assert.deepEqual(row.replyTime, expected.replyTime);
  const nobody = by.data.find((r: { key: string | null }) => r.key === null);
  assert.deepEqual(nobody.conversations, { opened: 2, resolved: 0 });
  assert.deepEqual(nobody.sla.firstResponse, { met: 0, breached: 1 });
  const byDept = await call(app, 'GET', `/reports/breakdown?by=department&from=${begin}&to=${end}`, {
    token: manager.token,
  });
  assert.deepEqual(
    byDept.data.map((r: { key: string; tasks: { created: number } }) => [
      r.key,
      r.tasks.created,
      Object.keys(r).sort(),
    ]),
    [['housekeeping', 2, ['key', 'sla', 'tasks']]],
  );
  const byChannel = await call(app, 'GET', `/reports/breakdown?by=channel&from=${begin}&to=${end}`, {
    token: manager.token,
  });
  assert.deepEqual(
    byChannel.data.map((r: { key: string; tasks: { created: number } }) => [r.key, r.tasks.created]),
    [['web', 1]],
  );

  // The time series adds up to the summary, bucket by bucket in hours.
  for (const metric of ['messages_inbound', 'reply_time', 'tasks_created', 'conversations_resolved']) {
    const series = await call(
      app,
      'GET',
      `/reports/timeseries?metric=${metric}&granularity=hour&from=${begin}&to=${end}&timezone=Asia/Kathmandu`,
      { token: manager.token },
    );
    assert.equal(series.status, 200, JSON.stringify(series.body));
    assert.equal(series.data[0].start, new Date(ms(begin)).toISOString());
    const total = series.data.reduce((s: number, b: { count: number }) => s + b.count, 0);
    const want = { messages_inbound: 3, reply_time: 2, tasks_created: 2, conversations_resolved: 1 }[metric];
    assert.equal(total, want, metric);
  }

  // CSV: the same figures, one per row.
  const csv = await call(app, 'GET', `/reports/summary?from=${begin}&to=${end}&businessHours=false`, {
    token: manager.token,
    headers: { accept: 'text/csv' },
  });
  assert.equal(csv.status, 200);
  assert.equal(csv.headers['content-type'], 'text/csv; charset=utf-8');
  assert.match(String(csv.headers['content-disposition']), /^attachment; filename=".+\.csv"$/);
  const lines = String(csv.raw.body).split('\r\n');
  assert.equal(lines[0], 'figure,value,previous');
  assert.ok(lines.includes('messages.inbound,3,0'), lines.join('\n'));
  assert.ok(lines.includes(`replyTime.count,2,0`));
});

test('business time: Friday 17:00 to Monday 09:30 under 09:00–18:00 on weekdays is 1 h 30 min', async () => {
  const { businessSecondsBetween, addBusinessSeconds } = await import('../../src/modules/reports/business-time.js');
  const weekdays = [{ open: '09:00', close: '18:00' }];
  const hours = {
    timezone: 'Europe/Lisbon',
    days: { mon: weekdays, tue: weekdays, wed: weekdays, thu: weekdays, fri: weekdays, sat: [], sun: [] },
  };
  // 2026-11-27 is a Friday; Lisbon is on UTC in winter.
  const fri = Date.parse('2026-11-27T17:00:00Z');
  const mon = Date.parse('2026-11-30T09:30:00Z');
  assert.equal(businessSecondsBetween(hours, fri, mon), 5400);
  assert.equal(addBusinessSeconds(hours, fri, 5400), mon);
});

test('staff get 403, an API key needs reports:read, and bad input names the parameter', async (t) => {
  const { app, admin, agent } = await setup(t);
  assertError(await call(app, 'GET', '/reports/summary', { token: agent.token }), 403, 'FORBIDDEN');
  const key = async (scopes: string[]) =>
    (await call(app, 'POST', '/api-keys', { token: admin.token, body: { name: scopes.join() || 'none', scopes } })).data
      .key;
  assertError(await call(app, 'GET', '/reports/summary', { token: await key(['tasks:read']) }), 403, 'FORBIDDEN');
  assert.equal((await call(app, 'GET', '/reports/summary', { token: await key(['reports:read']) })).status, 200);
  const bad: [string, string][] = [
    ['/reports/summary?from=yesterday', 'from'],
    ['/reports/summary?from=2026-01-02T00:00:00Z&to=2026-01-01T00:00:00Z', 'from'],
    ['/reports/summary?from=2025-01-01T00:00:00Z&to=2026-03-01T00:00:00Z', 'to'],
    ['/reports/summary?timezone=Mars/Olympus', 'timezone'],
    ['/reports/summary?channel=fax', 'channel'],
    ['/reports/summary?businessHours=maybe', 'businessHours'],
    ['/reports/summary?color=red', 'color'],
    ['/reports/timeseries?metric=vibes', 'metric'],
    ['/reports/timeseries?granularity=fortnight', 'granularity'],
    [
      '/reports/timeseries?metric=reply_time&granularity=hour&from=2026-01-01T00:00:00Z&to=2026-03-01T00:00:00Z',
      'granularity',
    ],
    ['/reports/breakdown?by=floor', 'by'],
  ];
  // The grown settings: fractional and per-channel targets, a 24:00 close; and what they refuse.
  const weekday = [{ open: '09:00', close: '24:00' }];
  const hours = {
    timezone: 'Asia/Kolkata',
    days: { mon: weekday, tue: [], wed: [], thu: [], fri: [], sat: [], sun: [] },
  };
  assert.equal(
    (await call(app, 'PUT', '/settings/business_hours', { token: admin.token, body: { value: hours } })).status,
    200,
  );
  const sla = {
    firstResponseMinutes: 0.5,
    channels: { whatsapp: { firstResponseMinutes: 2 } },
    taskMinutes: { low: 1, normal: 1, high: 1, urgent: 0.25 },
  };
  assert.equal((await call(app, 'PUT', '/settings/sla', { token: admin.token, body: { value: sla } })).status, 200);
  const refused: [string, unknown, string][] = [
    ['sla', { ...sla, channels: { fax: { firstResponseMinutes: 1 } } }, 'value.channels.fax'],
    ['sla', { ...sla, nextResponseMinutes: 0 }, 'value.nextResponseMinutes'],
    ['sla', { ...sla, resolutionMinutes: 525_601 }, 'value.resolutionMinutes'],
    [
      'business_hours',
      { ...hours, days: { ...hours.days, tue: [{ open: '09:00', close: '24:30' }] } },
      'value.days.tue.0.close',
    ],
  ];
  for (const [key, value, field] of refused) {
    const res = await call(app, 'PUT', `/settings/${key}`, { token: admin.token, body: { value } });
    assertError(res, 400, 'VALIDATION_ERROR', field);
    assert.ok(
      (res.body.error.details as { field: string }[]).some((d) => d.field === field),
      JSON.stringify(res.body.error.details),
    );
  }
  for (const [url, field] of bad) {
    const res = await call(app, 'GET', url, { token: admin.token });
    assertError(res, 400, 'VALIDATION_ERROR', url);
    assert.ok(
      (res.body.error.details as { field: string }[]).some((d) => d.field === field || d.field.endsWith(`.${field}`)),
      `${url}: ${JSON.stringify(res.body.error.details)}`,
    );
  }
});
