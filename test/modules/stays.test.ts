// Tests /stays through HTTP (docs/stays.md): the record and its validation, upserts by the PMS's
// reference one at a time and in bulk, the list's filters and cursor, events, roles and scopes,
// and the current stay guests and conversations show, judged in the hotel's time zone.
import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import { dayIn } from '../../src/modules/stays/dates.js';
import { insertConversation, insertGuest, insertTask } from '../fixtures.js';
import { assertPagesAgree, buildTestApp, call, createStaff, type Res } from '../helpers.js';

async function setup(t: TestContext, env: Record<string, string> = {}) {
  const app = await buildTestApp(t, env);
  const manager = await createStaff(app, 'manager');
  const staff = await createStaff(app, 'staff');
  const guestId = await insertGuest(app, 'Stay Guest');
  const create = async (body: Record<string, unknown>, token = manager.token) => {
    const res = await call(app, 'POST', '/stays', {
      token,
      body: { guestId, checkIn: '2030-03-01', checkOut: '2030-03-04', ...body },
    });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return res.data;
  };
  return { app, manager, staff, guestId, create };
}

const fields = (res: Res) =>
  [...new Set(((res.body.error?.details ?? []) as { field: string }[]).map((d) => d.field))].sort();

const days = (offset: number, tz = 'UTC') => dayIn(tz, new Date(Date.now() + offset * 86_400_000));

test('a manager creates a stay and gets the whole record, its Location and a stay.created event', async (t) => {
  const { app, manager, guestId } = await setup(t);
  const res = await call(app, 'POST', '/stays', {
    token: manager.token,
    body: {
      guestId,
      room: '412',
      checkIn: '2030-03-01',
      checkOut: '2030-03-04',
      adults: 2,
      children: 1,
      notes: 'Cot',
      externalRef: 'R-1',
    },
  });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  assert.match(res.data.id, /^sty_[0-9a-z]{26}$/);
  assert.equal(res.headers.location, `/api/v1/stays/${res.data.id}`);
  assert.deepEqual(
    { ...res.data, id: undefined, createdAt: undefined, updatedAt: undefined },
    {
      id: undefined,
      guestId,
      room: '412',
      checkIn: '2030-03-01',
      checkOut: '2030-03-04',
      status: 'booked',
      adults: 2,
      children: 1,
      notes: 'Cot',
      externalRef: 'R-1',
      createdAt: undefined,
      updatedAt: undefined,
    },
  );
  const got = await call(app, 'GET', `/stays/${res.data.id}`, { token: manager.token });
  assert.deepEqual(got.data, res.data);
  const events = await call(app, 'GET', '/events?types=stay.created', { token: manager.token });
  assert.deepEqual(
    events.data.map((e: { data: { id: string } }) => e.data.id),
    [res.data.id],
  );
  // Defaults, and a taken reference is a 409 naming the stay that holds it.
  const plain = await call(app, 'POST', '/stays', {
    token: manager.token,
    body: { guestId, checkIn: '2030-04-01', checkOut: '2030-04-02' },
  });
  assert.deepEqual(
    [plain.data.status, plain.data.adults, plain.data.children, plain.data.room],
    ['booked', 1, 0, null],
  );
  const dup = await call(app, 'POST', '/stays', {
    token: manager.token,
    body: { guestId, checkIn: '2030-04-01', checkOut: '2030-04-02', externalRef: 'R-1' },
  });
  assert.equal(dup.status, 409);
  assert.equal(dup.body.error.details[0].existingId, res.data.id);
});

test('bad input is a VALIDATION_ERROR naming the field: impossible days, checkOut, unknown guests', async (t) => {
  const { app, manager, guestId } = await setup(t);
  const post = (body: Record<string, unknown>) =>
    call(app, 'POST', '/stays', { token: manager.token, body: { guestId, ...body } });
  const cases: [Record<string, unknown>, string[]][] = [
    [{ checkIn: '2026-02-30', checkOut: '2026-03-02' }, ['checkIn']],
    [{ checkIn: '2026-02-27', checkOut: '2026-13-01' }, ['checkOut']],
    [{ checkIn: '2026-03-02', checkOut: '2026-03-02' }, ['checkOut']],
    [{ checkIn: '2026-03-05', checkOut: '2026-03-02' }, ['checkOut']],
    [{ checkIn: '2026/03/01', checkOut: '2026-03-02' }, ['checkIn']],
    [{ checkIn: '2026-03-01', checkOut: '2026-03-02', guestId: 'gst_01jd8x3k5q7w9e2r4t6y8v0m1n' }, ['guestId']],
    [{ checkIn: '2026-03-01', checkOut: '2026-03-02', guestId: undefined }, ['guestId']],
    [
      { checkIn: '2026-03-01', checkOut: '2026-03-02', guestId: undefined, guestExternalRef: 'NOPE' },
      ['guestExternalRef'],
    ],
    [{ checkIn: '2026-03-01', checkOut: '2026-03-02', guestExternalRef: 'X' }, ['guestExternalRef']],
    [{ checkIn: '2026-03-01', checkOut: '2026-03-02', adults: 0 }, ['adults']],
    [{ checkIn: '2026-03-01', checkOut: '2026-03-02', status: 'gone' }, ['status']],
    [{ checkIn: '2026-03-01', checkOut: '2026-03-02', id: 'sty_x' }, ['id']],
  ];
  for (const [body, want] of cases) {
    const res = await post(body);
    assert.equal(res.status, 400, JSON.stringify(body));
    assert.equal(res.body.error.code, 'VALIDATION_ERROR');
    assert.deepEqual(fields(res), want, JSON.stringify(body));
  }
  // 2028 is a leap year: its 29 February is a day.
  assert.equal((await post({ checkIn: '2028-02-29', checkOut: '2028-03-01' })).status, 201);
  const stay = (await post({ checkIn: '2030-01-01', checkOut: '2030-01-05' })).data;
  const patch = await call(app, 'PATCH', `/stays/${stay.id}`, {
    token: manager.token,
    body: { checkIn: '2030-01-05' },
  });
  assert.deepEqual(fields(patch), ['checkOut']);
  assert.equal((await call(app, 'GET', '/stays?on=2030-02-30', { token: manager.token })).status, 400);
});

test('PUT by-ref creates (201) then replaces (200); the same body again writes no event', async (t) => {
  const { app, manager, guestId } = await setup(t);
  const put = (body: Record<string, unknown>) =>
    call(app, 'PUT', '/stays/by-ref/RES-9', { token: manager.token, body: { guestId, ...body } });
  const full = { room: '12', checkIn: '2030-05-01', checkOut: '2030-05-03', adults: 3, notes: 'n' };
  const first = await put(full);
  assert.equal(first.status, 201, JSON.stringify(first.body));
  assert.equal(first.headers.location, `/api/v1/stays/${first.data.id}`);
  assert.equal(first.data.externalRef, 'RES-9');
  const again = await put(full);
  assert.equal(again.status, 200);
  assert.deepEqual(again.data, first.data);
  // A replacement: fields left out take their defaults.
  const replaced = await put({ checkIn: '2030-05-02', checkOut: '2030-05-03' });
  assert.equal(replaced.status, 200);
  assert.equal(replaced.data.id, first.data.id);
  assert.deepEqual(
    [replaced.data.room, replaced.data.adults, replaced.data.notes, replaced.data.checkIn],
    [null, 1, null, '2030-05-02'],
  );
  const events = await call(app, 'GET', '/events?types=stay.created,stay.updated', { token: manager.token });
  assert.deepEqual(
    events.data.map((e: { type: string }) => e.type),
    ['stay.created', 'stay.updated'],
  );
  assert.deepEqual(Object.keys(events.data[1].changes).sort(), ['adults', 'checkIn', 'notes', 'room']);
  assert.deepEqual(events.data[1].changes.room, { from: '12', to: null });
});

test('POST /stays/bulk upserts up to 100 by reference, each item on its own, in the bulk bucket', async (t) => {
  const { app, manager, guestId } = await setup(t, { RATE_LIMIT_BULK: '7' });
  const items = [
    { externalRef: 'B-1', guestId, checkIn: '2030-06-01', checkOut: '2030-06-02' },
    { externalRef: 'B-2', guestId, checkIn: '2030-06-05', checkOut: '2030-06-02' },
    { externalRef: 'B-3', guestId, checkIn: '2030-06-03', checkOut: '2030-06-04', room: '7' },
    { guestId, checkIn: '2030-06-03', checkOut: '2030-06-04' },
  ];
  const res = await call(app, 'POST', '/stays/bulk', { token: manager.token, body: { items } });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.equal(res.headers['x-ratelimit-limit'], '7');
  assert.deepEqual(
    res.data.map((r: { success: boolean }) => r.success),
    [true, false, true, false],
  );
  assert.deepEqual(res.data[1].error.details[0].field, 'checkOut');
  assert.deepEqual(res.data[3].error.details[0].field, 'externalRef');
  const twice = await call(app, 'POST', '/stays/bulk', { token: manager.token, body: { items: [items[2]] } });
  assert.equal(twice.data[0].data.id, res.data[2].data.id);
  const all = await call(app, 'GET', '/stays', { token: manager.token });
  assert.equal(all.body.meta.total, 2);
  const tooMany = Array.from({ length: 101 }, (_, i) => ({ ...items[0], externalRef: `M-${i}` }));
  assert.equal(
    (await call(app, 'POST', '/stays/bulk', { token: manager.token, body: { items: tooMany } })).status,
    400,
  );
});

test('the list orders by checkIn then id, filters by guest, status, room, arrival days and night, and walks by cursor', async (t) => {
  const { app, manager, guestId, create } = await setup(t);
  const other = await insertGuest(app, 'Other Guest');
  const a = await create({ checkIn: '2030-03-05', checkOut: '2030-03-08', room: '101' });
  const b = await create({ checkIn: '2030-03-01', checkOut: '2030-03-05', room: '102' });
  const c = await create({ checkIn: '2030-03-05', checkOut: '2030-03-06', room: '101', guestId: other });
  const d = await create({ checkIn: '2030-03-04', checkOut: '2030-03-09', status: 'cancelled' });
  const e = await create({ checkIn: '2030-03-10', checkOut: '2030-03-12', status: 'in_house' });
  const ids = async (query: string) =>
    (await call(app, 'GET', `/stays${query}`, { token: manager.token })).data.map((s: { id: string }) => s.id);
  const byArrival = [b, d, a, c, e].map((s) => s.id);

  assert.deepEqual(await ids(''), byArrival);
  await assertPagesAgree(app, manager.token, '/stays', byArrival);
  assert.deepEqual(await ids(`?guestId=${other}`), [c.id]);
  assert.deepEqual(await ids('?status=in_house'), [e.id]);
  assert.deepEqual(await ids('?room=101'), [a.id, c.id]);
  const refd = await create({ externalRef: 'REF-L', checkIn: '2030-03-20', checkOut: '2030-03-21' });
  assert.deepEqual(await ids('?externalRef=REF-L'), [refd.id]);
  await call(app, 'PATCH', `/stays/${refd.id}`, {
    token: manager.token,
    body: { status: 'cancelled', externalRef: null },
  });
  assert.deepEqual(await ids('?externalRef=REF-L'), []);
  byArrival.push(refd.id);
  assert.deepEqual(await ids('?checkInFrom=2030-03-04&checkInTo=2030-03-05'), [d.id, a.id, c.id]);
  // The night of 5 March: b leaves that morning, d is cancelled.
  assert.deepEqual(await ids('?on=2030-03-05'), [a.id, c.id]);
  assert.deepEqual(await ids('?on=2030-03-04'), [b.id]);
  assert.deepEqual(await ids(`?on=2030-03-05&guestId=${guestId}`), [a.id]);
  // A walk by cursor meets every stay once; a cursor of other filters is refused.
  const seen: string[] = [];
  let url = '/stays?limit=2';
  for (;;) {
    const page = await call(app, 'GET', url, { token: manager.token });
    seen.push(...page.data.map((s: { id: string }) => s.id));
    if (page.body.meta.nextCursor === null) break;
    url = `/stays?limit=2&cursor=${page.body.meta.nextCursor}`;
    if (seen.length === 2) {
      const wrong = await call(app, 'GET', `/stays?limit=2&room=101&cursor=${page.body.meta.nextCursor}`, {
        token: manager.token,
      });
      assert.deepEqual(fields(wrong), ['cursor']);
    }
  }
  assert.deepEqual(seen, byArrival);
});

test('PATCH changes any field and writes stay.updated with its changes', async (t) => {
  const { app, manager, create } = await setup(t);
  const stay = await create({ externalRef: 'P-1' });
  await create({ externalRef: 'P-2', checkIn: '2031-01-01', checkOut: '2031-01-02' });
  const res = await call(app, 'PATCH', `/stays/${stay.id}`, {
    token: manager.token,
    body: { status: 'in_house', room: '9', checkOut: '2030-03-06' },
  });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.deepEqual([res.data.status, res.data.room, res.data.checkOut], ['in_house', '9', '2030-03-06']);
  const events = await call(app, 'GET', '/events?types=stay.updated', { token: manager.token });
  assert.deepEqual(events.data[0].changes, {
    status: { from: 'booked', to: 'in_house' },
    room: { from: null, to: '9' },
    checkOut: { from: '2030-03-04', to: '2030-03-06' },
  });
  const taken = await call(app, 'PATCH', `/stays/${stay.id}`, { token: manager.token, body: { externalRef: 'P-2' } });
  assert.equal(taken.status, 409);
  assert.equal(
    (await call(app, 'PATCH', '/stays/sty_nope', { token: manager.token, body: { room: '1' } })).status,
    404,
  );
  assert.equal((await call(app, 'DELETE', `/stays/${stay.id}`, { token: manager.token })).status, 405);
});

test('a staff member reads only the stays of guests they may see, and writes none', async (t) => {
  const { app, staff, guestId, create } = await setup(t);
  const mine = await create({});
  const theirs = await create({ guestId: await insertGuest(app, 'Not Mine') });
  await insertConversation(app, guestId, { assignee: staff.id });
  const list = await call(app, 'GET', '/stays', { token: staff.token });
  assert.deepEqual(
    list.data.map((s: { id: string }) => s.id),
    [mine.id],
  );
  assert.equal(list.body.meta.total, 1);
  assert.equal((await call(app, 'GET', `/stays/${mine.id}`, { token: staff.token })).status, 200);
  assert.equal((await call(app, 'GET', `/stays/${theirs.id}`, { token: staff.token })).status, 403);
  assert.equal((await call(app, 'GET', '/stays/sty_01jd8x3k5q7w9e2r4t6y8v0m1n', { token: staff.token })).status, 404);
  const body = { guestId, checkIn: '2030-01-01', checkOut: '2030-01-02' };
  assert.equal((await call(app, 'POST', '/stays', { token: staff.token, body })).status, 403);
  assert.equal((await call(app, 'PUT', '/stays/by-ref/S-1', { token: staff.token, body })).status, 403);
  assert.equal(
    (await call(app, 'PATCH', `/stays/${mine.id}`, { token: staff.token, body: { room: '1' } })).status,
    403,
  );
  // Stay events are not a staff member's: they follow conversations and tasks.
  const events = await call(app, 'GET', '/events?types=stay.created', { token: staff.token });
  assert.deepEqual(events.data, []);
});

test('API keys need stays:read to read stays and stays:write to write them', async (t) => {
  const { app, guestId } = await setup(t);
  const admin = await createStaff(app, 'admin');
  const key = async (scopes: string[]) =>
    (await call(app, 'POST', '/api-keys', { token: admin.token, body: { name: scopes.join(' '), scopes } })).data.key;
  const reader = await key(['stays:read']);
  const writer = await key(['stays:write', 'guests:write']);
  const guestsOnly = await key(['guests:read']);
  const body = { guestId, checkIn: '2030-01-01', checkOut: '2030-01-02' };
  assert.equal((await call(app, 'GET', '/stays', { token: reader })).status, 200);
  const refused = await call(app, 'POST', '/stays', { token: reader, body });
  assert.equal(refused.status, 403);
  assert.match(refused.body.error.message, /stays:write/);
  assert.equal((await call(app, 'GET', '/stays', { token: guestsOnly })).status, 403);
  const made = await call(app, 'PUT', '/stays/by-ref/K-1', { token: writer, body });
  assert.equal(made.status, 201);
  assert.equal((await call(app, 'GET', `/stays/${made.data.id}`, { token: writer })).status, 200);
});

test("a guest's and a conversation's stay: in house, else the next booked one, judged in the hotel's time zone", async (t) => {
  const { app, manager, guestId, create } = await setup(t);
  const guest = async () => (await call(app, 'GET', `/guests/${guestId}`, { token: manager.token })).data.stay;
  assert.equal(await guest(), null);
  await create({ checkIn: days(-10), checkOut: days(-8), status: 'checked_out' });
  await create({ checkIn: days(1), checkOut: days(3), status: 'cancelled' });
  assert.equal(await guest(), null);
  await create({ checkIn: days(30), checkOut: days(32) });
  const next = await create({ checkIn: days(5), checkOut: days(7), room: '5' });
  assert.deepEqual(await guest(), {
    id: next.id,
    room: '5',
    checkIn: next.checkIn,
    checkOut: next.checkOut,
    status: 'booked',
  });
  const inHouse = await create({ checkIn: days(-1), checkOut: days(1), status: 'in_house', room: '3' });
  assert.equal((await guest()).id, inHouse.id);
  const conversationId = await insertConversation(app, guestId);
  const conversation = await call(app, 'GET', `/conversations/${conversationId}`, { token: manager.token });
  assert.equal(conversation.data.stay.id, inHouse.id);
  const listed = await call(app, 'GET', '/conversations', { token: manager.token });
  assert.equal(listed.data[0].stay.id, inHouse.id);
  const guests = await call(app, 'GET', '/guests', { token: manager.token });
  assert.equal(guests.data[0].stay.id, inHouse.id);
  await call(app, 'PATCH', `/stays/${inHouse.id}`, { token: manager.token, body: { status: 'checked_out' } });
  assert.equal((await guest()).id, next.id);

  // A booked stay leaving on a day that has already begun at UTC+14 but not yet at UTC-11 is
  // current in Pago Pago and over in Kiritimati.
  const tzGuest = await insertGuest(app, 'Zone Guest');
  const leaving = dayIn('Pacific/Kiritimati');
  await create({ guestId: tzGuest, checkIn: days(-3, 'Pacific/Kiritimati'), checkOut: leaving });
  const admin = await createStaff(app, 'admin');
  const zoned = async (timezone: string) => {
    await call(app, 'PUT', '/settings/hotel', {
      token: admin.token,
      body: { value: { name: 'H', timezone, locale: 'en' } },
    });
    return (await call(app, 'GET', `/guests/${tzGuest}`, { token: manager.token })).data.stay;
  };
  assert.notEqual(await zoned('Pacific/Pago_Pago'), null);
  assert.equal(await zoned('Pacific/Kiritimati'), null);
});

test("a task's stay makes its guest; another guest with it is a VALIDATION_ERROR", async (t) => {
  const { app, manager, guestId, create } = await setup(t);
  const stay = await create({});
  const post = (body: Record<string, unknown>) =>
    call(app, 'POST', '/tasks', { token: manager.token, body: { title: 'Cot', department: 'housekeeping', ...body } });
  const made = await post({ stayId: stay.id });
  assert.equal(made.status, 201, JSON.stringify(made.body));
  assert.deepEqual([made.data.stayId, made.data.guestId], [stay.id, guestId]);
  assert.equal((await post({ stayId: stay.id, guestId })).status, 201);
  const other = await insertGuest(app, 'Else');
  assert.deepEqual(fields(await post({ stayId: stay.id, guestId: other })), ['guestId']);
  assert.deepEqual(fields(await post({ stayId: 'sty_01jd8x3k5q7w9e2r4t6y8v0m1n' })), ['stayId']);
  // Linking later: a task of another guest refuses the stay; a task without a guest takes its guest.
  const foreign = await insertTask(app, other, null);
  const refused = await call(app, 'PATCH', `/tasks/${foreign}`, { token: manager.token, body: { stayId: stay.id } });
  assert.deepEqual(fields(refused), ['stayId']);
  const loose = (await post({})).data;
  const linked = await call(app, 'PATCH', `/tasks/${loose.id}`, { token: manager.token, body: { stayId: stay.id } });
  assert.deepEqual([linked.data.stayId, linked.data.guestId], [stay.id, guestId]);
});
