// Tests journeys (docs/stays.md, Journeys): the `journeys` setting refuses what a runner could not
// carry out (an unknown placeholder, a duplicate name, an action missing its fields), planStay puts
// each step at its moment, in the hotel's time zone, across DST, and the steps run through HTTP: a
// check-in sends its welcome once, a check-out opens its task once, a moved stay moves its step, a
// cancelled stay's step and a step more than 6 h late are skipped with their reasons.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { instantOf, type Journey, planStay } from '../../src/modules/stays/journeys.js';
import { insertGuest } from '../fixtures.js';
import { buildTestApp, call, createStaff, type Res } from '../helpers.js';
import { until } from './jobs-helpers.js';

const fields = (res: Res) => ((res.body.error?.details ?? []) as { field: string }[]).map((d) => d.field).sort();
const iso = (t: number) => new Date(t).toISOString();

test('a local time names one instant: the earlier of a repeated hour, past the gap of a skipped one', () => {
  // Lisbon: clocks skip 01:00–02:00 on 28 March 2027 and repeat 01:00–02:00 on 31 October 2027.
  assert.equal(iso(instantOf('Europe/Lisbon', '2027-03-28', '00:30')), '2027-03-28T00:30:00.000Z');
  assert.equal(iso(instantOf('Europe/Lisbon', '2027-03-28', '01:30')), '2027-03-28T01:30:00.000Z');
  assert.equal(iso(instantOf('Europe/Lisbon', '2027-03-28', '02:30')), '2027-03-28T01:30:00.000Z');
  assert.equal(iso(instantOf('Europe/Lisbon', '2027-10-31', '01:30')), '2027-10-31T00:30:00.000Z');
  assert.equal(iso(instantOf('Europe/Lisbon', '2027-10-31', '02:30')), '2027-10-31T02:30:00.000Z');
  assert.equal(iso(instantOf('America/New_York', '2027-03-14', '02:30')), '2027-03-14T07:30:00.000Z');
  assert.equal(iso(instantOf('Asia/Kolkata', '2027-01-10', '15:00')), '2027-01-10T09:30:00.000Z');
  assert.equal(iso(instantOf('UTC', '2028-02-29', '23:59')), '2028-02-29T23:59:00.000Z');
});

test('planStay puts each step at its event, shifted by its offset, then at its local time of day', () => {
  const clock = { timezone: 'Europe/Lisbon', checkInTime: '15:00', checkOutTime: '11:00' };
  const step = (name: string, when: Journey['when'], enabled?: boolean): Journey => ({
    name,
    ...(enabled === undefined ? {} : { enabled }),
    when,
    action: { type: 'message', content: 'Hi {{guest.firstName}}' },
  });
  const journeys = [
    step('welcome', { event: 'arrival' }),
    step('day-before', { event: 'arrival', offsetMinutes: -1440, at: '10:00' }),
    step('elapsed-day', { event: 'arrival', offsetMinutes: -1440 }),
    step('after-checkout', { event: 'departure', offsetMinutes: 60 }),
    step('in-room', { event: 'check_in', offsetMinutes: 30 }),
    step('bye', { event: 'check_out' }),
    step('off', { event: 'arrival' }, false),
  ];
  // Arrival on the night the clocks go forward: 15:00 is summer time (UTC+1), the day before winter time.
  const stay = { checkIn: '2027-03-28', checkOut: '2027-03-30' };
  assert.deepEqual(planStay(stay, journeys, clock), [
    { journey: 'day-before', event: 'arrival', dueAt: '2027-03-27T10:00:00.000Z' },
    { journey: 'elapsed-day', event: 'arrival', dueAt: '2027-03-27T14:00:00.000Z' },
    { journey: 'welcome', event: 'arrival', dueAt: '2027-03-28T14:00:00.000Z' },
    { journey: 'after-checkout', event: 'departure', dueAt: '2027-03-30T11:00:00.000Z' },
  ]);
  // check_in and check_out steps arise once the stay moved.
  const moved = { ...stay, checkedInAt: '2027-03-28T16:12:00.000Z', checkedOutAt: '2027-03-30T09:40:00.000Z' };
  const plan = planStay(moved, journeys, clock);
  assert.deepEqual(
    plan.filter((p) => p.event === 'check_in' || p.event === 'check_out'),
    [
      { journey: 'in-room', event: 'check_in', dueAt: '2027-03-28T16:42:00.000Z' },
      { journey: 'bye', event: 'check_out', dueAt: '2027-03-30T09:40:00.000Z' },
    ],
  );
  // `at` on the day the clocks go back: 10:00 the day before a 1 November arrival is winter time.
  const autumn = planStay({ checkIn: '2027-11-01', checkOut: '2027-11-02' }, [journeys[1]!], clock);
  assert.deepEqual(autumn[0]!.dueAt, '2027-10-31T10:00:00.000Z');
  const tokyo = planStay({ checkIn: '2027-11-01', checkOut: '2027-11-02' }, [journeys[1]!], {
    ...clock,
    timezone: 'Asia/Tokyo',
  });
  assert.deepEqual(tokyo[0]!.dueAt, '2027-10-31T01:00:00.000Z');
});

test('the journeys setting takes valid steps with their defaults and names each problem', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const put = (value: unknown) => call(app, 'PUT', '/settings/journeys', { token: admin.token, body: { value } });
  const welcome = {
    name: 'welcome',
    when: { event: 'arrival', offsetMinutes: -1440, at: '10:00' },
    channel: 'whatsapp',
    action: { type: 'message', content: 'Hello {{guest.firstName}}, room {{ stay.room }} awaits at {{hotel.name}}' },
  };
  const towels = {
    name: 'towels',
    when: { event: 'check_in' },
    action: { type: 'task', title: 'Towels to {{stay.room}}', department: 'housekeeping' },
  };
  const ok = await put([welcome, towels]);
  assert.equal(ok.status, 200, JSON.stringify(ok.body));
  assert.deepEqual(ok.data.value[1], { ...towels, enabled: true, when: { event: 'check_in', offsetMinutes: 0 } });
  const read = await call(app, 'GET', '/settings/journeys', { token: admin.token });
  assert.deepEqual(read.data.value, ok.data.value);

  assert.deepEqual(fields(await put([{ ...welcome, action: { type: 'message', content: 'Hi {{guest.email}}' } }])), [
    'value.0.action.content',
  ]);
  assert.deepEqual(fields(await put([welcome, { ...towels, name: 'welcome' }])), ['value.1.name']);
  assert.deepEqual(fields(await put([{ ...towels, action: { type: 'task', title: 'T' } }])), [
    'value.0.action.department',
  ]);
  assert.deepEqual(
    fields(
      await put([
        {
          ...welcome,
          action: { type: 'message', content: 'x', template: { name: 'n', language: 'en', parameters: [] } },
        },
      ]),
    ),
    ['value.0.action'],
  );
  assert.deepEqual(
    fields(
      await put([
        {
          ...welcome,
          action: { type: 'message', template: { name: 'n', language: 'en', parameters: ['{{stay.nights}}'] } },
        },
      ]),
    ),
    ['value.0.action.template.parameters.0'],
  );
  assert.deepEqual(fields(await put([{ ...welcome, when: { event: 'arrival', offsetMinutes: 43_201 } }])), [
    'value.0.when.offsetMinutes',
  ]);
  assert.deepEqual(fields(await put([{ ...welcome, when: { event: 'lunch' } }])), ['value.0.when.event']);
});

const dayOf = (t: number) => new Date(t).toISOString().slice(0, 10);
const DAY = 86_400_000;

test('journey steps run once on their stays, moved, skipped and recorded', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const token = admin.token;
  // The arrival moment one hour ago (UTC, minute precision): a step at arrival is due, not too late.
  const hourAgo = Date.now() - 3_600_000;
  const hotel = await call(app, 'PUT', '/settings/hotel', {
    token,
    body: {
      value: {
        name: 'Casa Azul',
        timezone: 'UTC',
        locale: 'en',
        checkInTime: new Date(hourAgo).toISOString().slice(11, 16),
        checkOutTime: '11:00',
      },
    },
  });
  assert.equal(hotel.status, 200, JSON.stringify(hotel.body));
  const journeys = await call(app, 'PUT', '/settings/journeys', {
    token,
    body: {
      value: [
        {
          name: 'welcome',
          when: { event: 'check_in' },
          channel: 'sms',
          action: { type: 'message', content: 'Welcome {{guest.firstName}} to room {{stay.room}} at {{hotel.name}}' },
        },
        {
          name: 'cleaning',
          when: { event: 'check_out' },
          action: { type: 'task', title: 'Clean room {{stay.room}}', department: 'housekeeping', priority: 'high' },
        },
        {
          name: 'day-before',
          when: { event: 'arrival', offsetMinutes: -1440, at: '10:00' },
          channel: 'sms',
          action: { type: 'message', content: 'See you tomorrow, {{guest.name}}' },
        },
        { name: 'arrived', when: { event: 'arrival' }, channel: 'sms', action: { type: 'message', content: 'Hi' } },
      ],
    },
  });
  assert.equal(journeys.status, 200, JSON.stringify(journeys.body));

  const guestId = await insertGuest(app, 'Rosa Marques');
  const create = async (body: object) => {
    const res = await call(app, 'POST', '/stays', { token, body: { guestId, ...body } });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return res.data.id as string;
  };
  const patch = async (id: string, body: object) => {
    const res = await call(app, 'PATCH', `/stays/${id}`, { token, body });
    assert.equal(res.status, 200, JSON.stringify(res.body));
  };
  // biome-ignore lint/suspicious/noExplicitAny: the API's JSON.
  const steps = async (id: string): Promise<Record<string, any>> => {
    const res = await call(app, 'GET', `/stays/${id}/journey`, { token });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    // biome-ignore lint/suspicious/noExplicitAny: the API's JSON.
    return Object.fromEntries(res.data.map((s: any) => [s.journey, s]));
  };
  const settled = (id: string, journey: string) =>
    until(async () => (await steps(id))[journey]?.status !== 'scheduled', 8000, `${journey} of ${id} to run`);

  // A check-in sends the welcome, once, from the system, on the journey's channel.
  const future = dayOf(Date.now() + 30 * DAY);
  const stay = await create({ room: '204', checkIn: future, checkOut: dayOf(Date.now() + 33 * DAY) });
  const planned = await steps(stay);
  assert.deepEqual(Object.keys(planned).sort(), ['arrived', 'day-before']);
  assert.equal(planned['day-before'].status, 'scheduled');
  assert.equal(planned['day-before'].dueAt, `${dayOf(Date.now() + 29 * DAY)}T10:00:00.000Z`);
  await patch(stay, { status: 'in_house' });
  await settled(stay, 'welcome');
  const welcome = (await steps(stay)).welcome;
  assert.equal(welcome.status, 'done', JSON.stringify(welcome));
  assert.equal(welcome.taskId, null);
  assert.equal(welcome.reason, null);
  const conversations = await call(app, 'GET', '/conversations', { token });
  assert.equal(conversations.data.length, 1);
  assert.equal(conversations.data[0].guestId, guestId);
  assert.equal(conversations.data[0].channel, 'sms');
  const cnv = conversations.data[0].id as string;
  type Sent = { id: string; content: string; sender: { type: string } };
  const systemMessages = async (): Promise<Sent[]> =>
    ((await call(app, 'GET', `/conversations/${cnv}/messages`, { token })).data as Sent[]).filter(
      (m) => m.sender.type === 'system',
    );
  const sent = await systemMessages();
  assert.equal(sent.length, 1);
  assert.equal(sent[0]!.id, welcome.messageId);
  assert.equal(sent[0]!.content, 'Welcome Rosa to room 204 at Casa Azul');
  // Checking in again does not send it again.
  await patch(stay, { status: 'booked' });
  await patch(stay, { status: 'in_house' });

  // A check-out opens the cleaning task, once, linked to the stay.
  await patch(stay, { status: 'checked_out' });
  await settled(stay, 'cleaning');
  const cleaning = (await steps(stay)).cleaning;
  assert.equal(cleaning.status, 'done', JSON.stringify(cleaning));
  const task = await call(app, 'GET', `/tasks/${cleaning.taskId}`, { token });
  assert.equal(task.status, 200);
  assert.equal(task.data.title, 'Clean room 204');
  assert.equal(task.data.priority, 'high');
  assert.equal(task.data.stayId, stay);
  assert.equal(task.data.guestId, guestId);
  await patch(stay, { status: 'in_house' });
  await patch(stay, { status: 'checked_out' });
  await sleep(1500);
  assert.equal((await systemMessages()).length, 1, 'the welcome went once');
  const tasks = await call(app, 'GET', '/tasks', { token });
  assert.equal(tasks.data.length, 1, 'the cleaning task was opened once');
  const events = await call(app, 'GET', '/events?types=journey.step_done&limit=100', { token });
  assert.deepEqual(
    // biome-ignore lint/suspicious/noExplicitAny: the feed's JSON.
    events.data.map((e: any) => e.data.journey).sort(),
    ['cleaning', 'welcome'],
  );
  assert.deepEqual(events.data.find((e: { data: { journey: string } }) => e.data.journey === 'welcome').data, {
    ...welcome,
    stayId: stay,
    guestId,
    event: 'check_in',
  });

  // A moved stay moves its pending step.
  const moving = await create({ checkIn: future, checkOut: dayOf(Date.now() + 32 * DAY) });
  await patch(moving, { checkIn: dayOf(Date.now() + 31 * DAY), checkOut: dayOf(Date.now() + 34 * DAY) });
  const moved = await steps(moving);
  assert.equal(moved['day-before'].dueAt, `${dayOf(Date.now() + 30 * DAY)}T10:00:00.000Z`);
  assert.equal(moved['day-before'].status, 'scheduled');

  // A cancelled stay's step is skipped at its moment (here an hour ago: at once), with its reason.
  const cancelled = await create({ checkIn: dayOf(hourAgo), checkOut: dayOf(hourAgo + 2 * DAY), status: 'cancelled' });
  await settled(cancelled, 'arrived');
  const skipped = (await steps(cancelled)).arrived;
  assert.equal(skipped.status, 'skipped');
  assert.equal(skipped.reason, 'the stay is cancelled');
  assert.equal(skipped.messageId, null);

  // A step more than 6 h late when it is scheduled (a late import) is skipped with its reason.
  const late = await create({ checkIn: dayOf(Date.now() - 3 * DAY), checkOut: dayOf(Date.now() + DAY) });
  const lateSteps = await steps(late);
  assert.equal(lateSteps.arrived.status, 'skipped');
  assert.equal(lateSteps.arrived.reason, 'more than 6 h late when it was scheduled');
  const skips = await call(app, 'GET', '/events?types=journey.step_skipped&limit=100', { token });
  // biome-ignore lint/suspicious/noExplicitAny: the feed's JSON.
  const reasons = skips.data.filter((e: any) => e.data.stayId === late).map((e: any) => e.data.journey);
  assert.deepEqual(reasons.sort(), ['arrived', 'day-before']);
  assert.equal((await call(app, 'GET', `/stays/sty_${'0'.repeat(26)}/journey`, { token })).status, 404);
});
