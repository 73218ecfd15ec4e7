// Tests journeys before they run (docs/stays.md, Journeys): the `journeys` setting refuses what a
// runner could not carry out (an unknown placeholder, a duplicate name, an action missing its
// fields), and planStay puts each step at its moment, in the hotel's time zone, across DST.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { instantOf, type Journey, planStay } from '../../src/modules/stays/journeys.js';
import { buildTestApp, call, createStaff, type Res } from '../helpers.js';

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
