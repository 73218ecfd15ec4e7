// Settings rules (docs/decisions.md, Staff and settings): who may read and write, every known key's default and value
// schema, custom.<name> keys, listing and reset.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp, call, createStaff, type Res } from '../helpers.js';

const fields = (res: Res) => (res.body.error?.details ?? []).map((d: { field: string }) => d.field);

const DEFAULTS: Record<string, unknown> = {
  hotel: { name: 'My Hotel', timezone: 'UTC', locale: 'en', checkInTime: '15:00', checkOutTime: '11:00' },
  departments: ['housekeeping', 'front-desk', 'maintenance', 'concierge', 'food-and-beverage'],
  business_hours: {
    timezone: 'UTC',
    days: Object.fromEntries(
      ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'].map((d) => [d, [{ open: '00:00', close: '24:00' }]]),
    ),
  },
  auto_reply: { enabled: false, message: 'Thank you for your message. We will reply shortly.' },
  sla: { firstResponseMinutes: 15, taskMinutes: { low: 1440, normal: 240, high: 60, urgent: 15 } },
  whatsapp_templates: [],
  labels: [],
  journeys: [],
};

const HOURS = {
  timezone: 'Europe/Berlin',
  days: {
    mon: [
      { open: '08:00', close: '12:00' },
      { open: '13:00', close: '18:00' },
    ],
    tue: [{ open: '08:00', close: '18:00' }],
    wed: [{ open: '08:00', close: '18:00' }],
    thu: [{ open: '08:00', close: '18:00' }],
    fri: [{ open: '08:00', close: '18:00' }],
    sat: [],
    sun: [],
  },
};

test('GET a setting: admin and manager yes, staff 403', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const manager = await createStaff(app, 'manager');
  const staff = await createStaff(app, 'staff');
  for (const who of [admin, manager]) {
    const res = await call(app, 'GET', '/settings/hotel', { token: who.token });
    assert.equal(res.status, 200);
    assert.equal(res.data.key, 'hotel');
  }
  for (const url of ['/settings/hotel', '/settings']) {
    const res = await call(app, 'GET', url, { token: staff.token });
    assert.equal(res.status, 403);
    assert.equal(res.body.error.code, 'FORBIDDEN');
  }
});

test('PUT and DELETE are admin only', async (t) => {
  const app = await buildTestApp(t);
  const manager = await createStaff(app, 'manager');
  const staff = await createStaff(app, 'staff');
  for (const who of [manager, staff]) {
    const put = await call(app, 'PUT', '/settings/hotel', {
      token: who.token,
      body: { value: { name: 'Mine', timezone: 'UTC', locale: 'en' } },
    });
    assert.equal(put.status, 403);
    assert.equal(put.body.error.code, 'FORBIDDEN');
    assert.equal((await call(app, 'DELETE', '/settings/hotel', { token: who.token })).status, 403);
  }
  const read = await call(app, 'GET', '/settings/hotel', { token: manager.token });
  assert.deepEqual(read.data.value, DEFAULTS.hotel);
});

test('every known key answers its default until set', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  for (const [key, value] of Object.entries(DEFAULTS)) {
    const res = await call(app, 'GET', `/settings/${key}`, { token: admin.token });
    assert.equal(res.status, 200, key);
    assert.deepEqual(res.data, { key, value, updatedAt: null, updatedBy: null });
  }
});

test('PUT stores a valid value for every known key, with updatedBy the admin', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const values: Record<string, unknown> = {
    hotel: { name: 'Seaside Inn', timezone: 'America/New_York', locale: 'en-US' },
    departments: ['housekeeping', 'spa'],
    business_hours: HOURS,
    auto_reply: { enabled: true, message: 'We will be right with you.' },
    sla: { firstResponseMinutes: 5, taskMinutes: { low: 600, normal: 120, high: 30, urgent: 10 } },
  };
  for (const [key, value] of Object.entries(values)) {
    const put = await call(app, 'PUT', `/settings/${key}`, { token: admin.token, body: { value } });
    assert.equal(put.status, 200, `${key}: ${JSON.stringify(put.body)}`);
    assert.deepEqual(put.data.value, value);
    assert.equal(put.data.updatedBy, admin.id);
    assert.ok(Math.abs(Date.parse(put.data.updatedAt) - Date.now()) < 60_000);
    const get = await call(app, 'GET', `/settings/${key}`, { token: admin.token });
    assert.deepEqual(get.data, put.data);
  }
});

test('a key with settings:write sets and resets a setting; updatedBy is null and the event names the key', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const made = await call(app, 'POST', '/api-keys', {
    token: admin.token,
    body: { name: 'PMS', scopes: ['settings:write', 'events:read'] },
  });
  const key = made.data.key as string;
  const put = await call(app, 'PUT', '/settings/custom.pms', { token: key, body: { value: { room: 12 } } });
  assert.equal(put.status, 200, put.raw.body);
  assert.equal(put.data.updatedBy, null, 'updatedBy names staff only');
  assert.deepEqual((await call(app, 'GET', '/settings/custom.pms', { token: key })).data, put.data);
  assert.equal((await call(app, 'DELETE', '/settings/custom.pms', { token: key })).status, 200);
  const events = await call(app, 'GET', '/events?types=setting.updated', { token: key });
  assert.deepEqual(
    events.data.map((e: { actor: unknown }) => e.actor),
    [
      { type: 'api_key', id: made.data.id },
      { type: 'api_key', id: made.data.id },
    ],
  );
});

test("each known key's schema is enforced, naming value.<field>", async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const hotel = { name: 'Seaside Inn', timezone: 'UTC', locale: 'en' };
  const cases: [string, unknown, string][] = [
    ['hotel', { ...hotel, timezone: 'Mars/Olympus_Mons' }, 'value.timezone'],
    ['hotel', { ...hotel, locale: 'not a locale!' }, 'value.locale'],
    ['hotel', { ...hotel, stars: 5 }, 'value.stars'],
    ['hotel', { name: 'No zone', locale: 'en' }, 'value.timezone'],
    ['hotel', 'Seaside Inn', 'value'],
    ['departments', ['spa', 'spa'], 'value'],
    ['departments', [], 'value'],
    ['departments', ['Front Desk'], 'value.0'],
    [
      'business_hours',
      { ...HOURS, days: { ...HOURS.days, tue: [{ open: '18:00', close: '08:00' }] } },
      'value.days.tue.0',
    ],
    [
      'business_hours',
      { ...HOURS, days: { ...HOURS.days, mon: [{ open: '25:00', close: '26:00' }] } },
      'value.days.mon.0.open',
    ],
    ['business_hours', { ...HOURS, timezone: 'Nowhere/Land' }, 'value.timezone'],
    ['business_hours', { ...HOURS, holidays: [] }, 'value.holidays'],
    ['auto_reply', { enabled: 'true', message: 'Hi' }, 'value.enabled'],
    ['auto_reply', { enabled: true, message: 'Hi', delay: 3 }, 'value.delay'],
    [
      'sla',
      { firstResponseMinutes: 0, taskMinutes: { low: 1, normal: 1, high: 1, urgent: 1 } },
      'value.firstResponseMinutes',
    ],
    [
      'sla',
      { firstResponseMinutes: 5, taskMinutes: { low: 1, normal: -5, high: 1, urgent: 1 } },
      'value.taskMinutes.normal',
    ],
    [
      'sla',
      { firstResponseMinutes: 5, taskMinutes: { low: 1, normal: 1, high: 1, urgent: 1, critical: 1 } },
      'value.taskMinutes.critical',
    ],
  ];
  for (const [key, value, field] of cases) {
    const res = await call(app, 'PUT', `/settings/${key}`, { token: admin.token, body: { value } });
    assert.equal(res.status, 400, `${key} ${JSON.stringify(value)}: ${res.status}`);
    assert.equal(res.body.error.code, 'VALIDATION_ERROR');
    assert.ok(fields(res).includes(field), `${key}: expected ${field} in ${JSON.stringify(res.body.error.details)}`);
  }
  for (const key of Object.keys(DEFAULTS)) {
    const res = await call(app, 'GET', `/settings/${key}`, { token: admin.token });
    assert.equal(res.data.updatedAt, null, `${key} was not written`);
  }
});

test('PUT body: value is required and nothing else is allowed', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const missing = await call(app, 'PUT', '/settings/custom.x', { token: admin.token, body: {} });
  assert.equal(missing.status, 400);
  assert.ok(fields(missing).includes('value'));
  const extra = await call(app, 'PUT', '/settings/custom.x', { token: admin.token, body: { value: 1, key: 'hotel' } });
  assert.equal(extra.status, 400);
  assert.ok(fields(extra).includes('key'));
});

test('custom.<name> takes any JSON value up to 64 KiB', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const values: [string, unknown][] = [
    ['custom.greeting', 'Welcome!'],
    ['custom.floors', 12],
    ['custom.flag', false],
    ['custom.nothing', null],
    ['custom.list', [1, 'two', { three: 3 }]],
    ['custom.wifi', { ssid: 'Guest', rooms: { '101': true }, nested: { deep: [null, 1.5] } }],
    ['custom.quoted', '"quoted" \\ text'],
  ];
  for (const [key, value] of values) {
    const put = await call(app, 'PUT', `/settings/${key}`, { token: admin.token, body: { value } });
    assert.equal(put.status, 200, `${key}: ${JSON.stringify(put.body)}`);
    assert.deepEqual(put.data.value, value);
    const get = await call(app, 'GET', `/settings/${key}`, { token: admin.token });
    assert.equal(get.status, 200);
    assert.deepEqual(get.data.value, value, key);
    assert.equal(get.data.updatedBy, admin.id);
  }
  const fits = await call(app, 'PUT', '/settings/custom.big', {
    token: admin.token,
    body: { value: 'x'.repeat(60_000) },
  });
  assert.equal(fits.status, 200);
  const tooBig = await call(app, 'PUT', '/settings/custom.big', {
    token: admin.token,
    body: { value: { text: 'x'.repeat(64 * 1024) } },
  });
  assert.equal(tooBig.status, 400);
  assert.ok(fields(tooBig).includes('value'));
  const kept = await call(app, 'GET', '/settings/custom.big', { token: admin.token });
  assert.equal(kept.data.value.length, 60_000);
});

test('an unknown key is 404 on GET, PUT and DELETE', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  for (const key of ['colors', 'custom.', '__proto__', 'constructor', 'toString', 'custom.never-set']) {
    const get = await call(app, 'GET', `/settings/${key}`, { token: admin.token });
    assert.equal(get.status, 404, key);
    assert.equal(get.body.error.code, 'NOT_FOUND');
    if (key === 'custom.never-set') continue;
    const put = await call(app, 'PUT', `/settings/${key}`, { token: admin.token, body: { value: 1 } });
    assert.equal(put.status, 404, key);
    // The answer says what a key may be: a known one, or custom.<name> for one of your own.
    assert.match(put.body.error.message, /custom\.<name>/, key);
    assert.match(put.body.error.message, /hotel, departments/, key);
    assert.equal((await call(app, 'DELETE', `/settings/${key}`, { token: admin.token })).status, 404, key);
  }
});

test('GET /settings lists every known key and every custom key set', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  await call(app, 'PUT', '/settings/custom.wifi', { token: admin.token, body: { value: 'guest-net' } });
  await call(app, 'PUT', '/settings/auto_reply', {
    token: admin.token,
    body: { value: { enabled: true, message: 'Hello' } },
  });
  const manager = await createStaff(app, 'manager');
  const res = await call(app, 'GET', '/settings', { token: manager.token });
  assert.equal(res.status, 200);
  const byKey = new Map(res.data.map((s: { key: string }) => [s.key, s]));
  assert.deepEqual([...byKey.keys()].sort(), [...Object.keys(DEFAULTS), 'custom.wifi'].sort());
  assert.deepEqual((byKey.get('hotel') as { value: unknown }).value, DEFAULTS.hotel);
  assert.deepEqual((byKey.get('auto_reply') as { value: unknown }).value, { enabled: true, message: 'Hello' });
  assert.equal((byKey.get('custom.wifi') as { updatedBy: string }).updatedBy, admin.id);
});

test('DELETE resets a known key to its default and removes a custom key', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const hotel = { name: 'Seaside Inn', timezone: 'Asia/Tokyo', locale: 'ja-JP' };
  await call(app, 'PUT', '/settings/hotel', { token: admin.token, body: { value: hotel } });
  await call(app, 'PUT', '/settings/custom.temp', { token: admin.token, body: { value: [1, 2] } });

  const reset = await call(app, 'DELETE', '/settings/hotel', { token: admin.token });
  assert.equal(reset.status, 200);
  assert.deepEqual(reset.data, { key: 'hotel', deleted: true });
  const back = await call(app, 'GET', '/settings/hotel', { token: admin.token });
  assert.deepEqual(back.data, { key: 'hotel', value: DEFAULTS.hotel, updatedAt: null, updatedBy: null });

  const removed = await call(app, 'DELETE', '/settings/custom.temp', { token: admin.token });
  assert.equal(removed.status, 200);
  assert.equal((await call(app, 'GET', '/settings/custom.temp', { token: admin.token })).status, 404);
  assert.equal((await call(app, 'DELETE', '/settings/custom.temp', { token: admin.token })).status, 404);
  const list = await call(app, 'GET', '/settings', { token: admin.token });
  assert.ok(!list.data.some((s: { key: string }) => s.key === 'custom.temp'));
});

test('at most 100 custom keys are kept: the 101st is 409 CONFLICT, an existing one still updates', async (t) => {
  const app = await buildTestApp(t, { RATE_LIMIT_STANDARD: '1000' });
  const admin = await createStaff(app, 'admin');
  for (let i = 0; i < 100; i++) {
    const put = await call(app, 'PUT', `/settings/custom.k${i}`, { token: admin.token, body: { value: i } });
    assert.equal(put.status, 200);
  }
  const over = await call(app, 'PUT', '/settings/custom.k100', { token: admin.token, body: { value: 100 } });
  assert.equal(over.status, 409);
  assert.equal(over.body.error.code, 'CONFLICT');
  assert.equal((await call(app, 'GET', '/settings/custom.k100', { token: admin.token })).status, 404);
  const again = await call(app, 'PUT', '/settings/custom.k7', { token: admin.token, body: { value: 'seven' } });
  assert.equal(again.status, 200);
  const departments = await call(app, 'GET', '/settings/departments', { token: admin.token });
  const known = await call(app, 'PUT', '/settings/departments', {
    token: admin.token,
    body: { value: departments.data.value },
  });
  assert.equal(known.status, 200, 'known keys do not count');
  assert.equal((await call(app, 'DELETE', '/settings/custom.k0', { token: admin.token })).status, 200);
  const room = await call(app, 'PUT', '/settings/custom.k100', { token: admin.token, body: { value: 100 } });
  assert.equal(room.status, 200);
  const list = await call(app, 'GET', '/settings', { token: admin.token });
  assert.equal(list.data.filter((s: { key: string }) => s.key.startsWith('custom.')).length, 100);
});
