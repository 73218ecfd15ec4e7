// Canned responses (docs/productivity.md): admins and managers write them, everyone reads and
// searches them, and a message sent with one carries its text filled in for the conversation.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { assertError, insertConversation, insertGuest } from '../fixtures.js';
import { buildTestApp, call, createStaff, type TestUser } from '../helpers.js';

interface Desk {
  app: FastifyInstance;
  admin: TestUser;
  manager: TestUser;
  staff: TestUser;
}

async function desk(t: Parameters<typeof buildTestApp>[0]): Promise<Desk> {
  const app = await buildTestApp(t);
  const [admin, manager, staff] = await Promise.all([
    createStaff(app, 'admin'),
    createStaff(app, 'manager', { name: 'Marta Silva' }),
    createStaff(app, 'staff', { name: 'Rui Costa' }),
  ]);
  return { app, admin, manager, staff };
}

async function add(d: Desk, body: Record<string, unknown>) {
  const res = await call(d.app, 'POST', '/canned-responses', { token: d.manager.token, body });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.data as { id: string; shortcode: string };
}

const LATE = {
  shortcode: 'late_checkout',
  title: 'Late check-out offer',
  content: 'Hello {{guest.firstName}}, a late check-out at 14:00 is yours.',
};

test('managers create, change and delete canned responses; staff read them; shortcodes are unique', async (t) => {
  const d = await desk(t);
  const res = await call(d.app, 'POST', '/canned-responses', { token: d.manager.token, body: LATE });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  assert.match(res.data.id, /^cr_[0-9a-z]{26}$/);
  assert.equal(res.headers.location, `/api/v1/canned-responses/${res.data.id}`);
  assert.deepEqual(
    { ...res.data, id: undefined, createdAt: undefined, updatedAt: undefined },
    { ...LATE, id: undefined, createdAt: undefined, updatedAt: undefined },
  );
  const got = await call(d.app, 'GET', `/canned-responses/${res.data.id}`, { token: d.staff.token });
  assert.deepEqual(got.data, res.data);
  assertError(
    await call(d.app, 'POST', '/canned-responses', { token: d.staff.token, body: { ...LATE, shortcode: 'x' } }),
    403,
    'FORBIDDEN',
  );
  const dup = await call(d.app, 'POST', '/canned-responses', { token: d.admin.token, body: LATE });
  assertError(dup, 409, 'CONFLICT');
  assert.equal(dup.body.error.details[0].existingId, res.data.id);

  const other = await add(d, { shortcode: 'wifi', title: 'Wi-Fi', content: 'The network is Miramar-Guest.' });
  assertError(
    await call(d.app, 'PATCH', `/canned-responses/${other.id}`, {
      token: d.manager.token,
      body: { shortcode: 'late_checkout' },
    }),
    409,
    'CONFLICT',
  );
  const changed = await call(d.app, 'PATCH', `/canned-responses/${other.id}`, {
    token: d.manager.token,
    body: { title: 'Wi-Fi password' },
  });
  assert.equal(changed.status, 200);
  assert.equal(changed.data.title, 'Wi-Fi password');
  assert.equal(changed.data.shortcode, 'wifi');
  assertError(await call(d.app, 'DELETE', `/canned-responses/${other.id}`, { token: d.staff.token }), 403, 'FORBIDDEN');
  const deleted = await call(d.app, 'DELETE', `/canned-responses/${other.id}`, { token: d.manager.token });
  assert.deepEqual(deleted.data, { id: other.id, deleted: true });
  assertError(await call(d.app, 'GET', `/canned-responses/${other.id}`, { token: d.staff.token }), 404, 'NOT_FOUND');

  const list = await call(d.app, 'GET', '/canned-responses', { token: d.staff.token });
  assert.deepEqual(
    list.data.map((c: { shortcode: string }) => c.shortcode),
    ['late_checkout'],
  );
  assert.equal(list.body.meta.total, 1);
});

test('bad canned responses are a VALIDATION_ERROR naming the field, unknown placeholders included', async (t) => {
  const d = await desk(t);
  const cases: [Record<string, unknown>, string][] = [
    [{ ...LATE, shortcode: 'Late Checkout' }, 'shortcode'],
    [{ ...LATE, content: 'Hi {{guest.nickname}}' }, 'content'],
    [{ ...LATE, content: 'Hi {{ stay.rooms }}' }, 'content'],
    [{ ...LATE, content: 'x'.repeat(4097) }, 'content'],
    [{ ...LATE, colour: 'red' }, 'colour'],
    [{ shortcode: 'a', title: 'A' }, 'content'],
  ];
  for (const [body, field] of cases) {
    const res = await call(d.app, 'POST', '/canned-responses', { token: d.manager.token, body });
    assertError(res, 400, 'VALIDATION_ERROR', field);
    assert.ok(
      res.body.error.details.some((e: { field: string }) => e.field === field),
      `${field}: ${JSON.stringify(res.body)}`,
    );
  }
  const pattern = await call(d.app, 'POST', '/canned-responses', {
    token: d.manager.token,
    body: { ...LATE, shortcode: 'Bad!' },
  });
  assert.doesNotMatch(pattern.body.error.details[0].message, /\^|\[/);
  const unknown = await call(d.app, 'POST', '/canned-responses', {
    token: d.manager.token,
    body: { ...LATE, content: 'Hi {{guest.nickname}}' },
  });
  assert.match(unknown.body.error.details[0].message, /\{\{guest\.nickname\}\}/);
  const created = await add(d, LATE);
  const patch = await call(d.app, 'PATCH', `/canned-responses/${created.id}`, {
    token: d.manager.token,
    body: { content: '{{hotel.address}}' },
  });
  assertError(patch, 400, 'VALIDATION_ERROR');
  assert.equal(patch.body.error.details[0].field, 'content');
  assertError(
    await call(d.app, 'PATCH', `/canned-responses/${created.id}`, { token: d.manager.token, body: {} }),
    400,
    'VALIDATION_ERROR',
  );
});

test('?search= matches words of shortcode, title and content, case-insensitively, best first', async (t) => {
  const d = await desk(t);
  const late = await add(d, LATE);
  const breakfast = await add(d, {
    shortcode: 'breakfast',
    title: 'Breakfast hours',
    content: 'Breakfast is served from 7 to 10; a late breakfast can be brought to the room.',
  });
  await add(d, { shortcode: 'wifi', title: 'Wi-Fi', content: 'The network is Miramar-Guest.' });
  const search = async (q: string) => {
    const res = await call(d.app, 'GET', `/canned-responses?search=${encodeURIComponent(q)}`, {
      token: d.staff.token,
    });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return res.data.map((c: { id: string }) => c.id);
  };
  assert.deepEqual(await search('LATE'), [late.id, breakfast.id]);
  assert.deepEqual(await search('breakfast'), [breakfast.id]);
  assert.deepEqual(await search('late_checkout'), [late.id]);
  assert.deepEqual(await search('miramar'), (await search('wifi')).slice(0, 1));
  assert.deepEqual(await search('late spa'), []);
  assert.equal((await search('')).length, 3);
});

test('a message sent with cannedResponseId carries its text filled in for the conversation', async (t) => {
  const d = await desk(t);
  await call(d.app, 'PUT', '/settings/hotel', {
    token: d.admin.token,
    body: { value: { name: 'Hotel Miramar', timezone: 'Europe/Lisbon', locale: 'pt-PT' } },
  });
  const guest = await insertGuest(d.app, 'Ana Maria Lopes');
  const conversation = await insertConversation(d.app, guest, { assignee: d.staff.id });
  const canned = await add(d, {
    shortcode: 'all',
    title: 'Every placeholder',
    content:
      'Dear {{guest.name}} ({{ guest.firstName }}): room [{{stay.room}}] {{stay.checkIn}}-{{stay.checkOut}}. ' +
      '{{staff.name}}, {{hotel.name}}',
  });
  const send = (body: Record<string, unknown>, token = d.staff.token) =>
    call(d.app, 'POST', `/conversations/${conversation}/messages`, { token, body });

  const sent = await send({ cannedResponseId: canned.id });
  assert.equal(sent.status, 201, JSON.stringify(sent.body));
  const expected = 'Dear Ana Maria Lopes (Ana): room [] -. Rui Costa, Hotel Miramar';
  assert.equal(sent.data.content, expected);
  assert.equal(sent.data.type, 'text');
  assert.equal(sent.data.direction, 'outbound');
  assert.equal(sent.data.deliveryStatus, 'sent');
  const listed = await call(d.app, 'GET', `/conversations/${conversation}/messages`, { token: d.staff.token });
  assert.deepEqual(
    listed.data.map((m: { content: string }) => m.content),
    [expected],
  );
  const note = await send({ cannedResponseId: canned.id, type: 'note' }, d.manager.token);
  assert.equal(note.status, 201);
  assert.equal(note.data.type, 'note');
  assert.match(note.data.content, /Marta Silva, Hotel Miramar$/);

  for (const [body, field] of [
    [{ cannedResponseId: canned.id, content: 'Hi' }, 'cannedResponseId'],
    [{ cannedResponseId: 'cr_01jd8x3k5q7w9e2r4t6y8v0m1n' }, 'cannedResponseId'],
    [{ cannedResponseId: 'nope' }, 'cannedResponseId'],
    [{ type: 'text' }, 'content'],
  ] as const) {
    const res = await send(body);
    assertError(res, 400, 'VALIDATION_ERROR', JSON.stringify(body));
    assert.equal(res.body.error.details[0].field, field, JSON.stringify(res.body));
  }
  const empty = await add(d, { shortcode: 'room', title: 'Room only', content: '{{stay.room}}' });
  const blank = await send({ cannedResponseId: empty.id });
  assertError(blank, 400, 'VALIDATION_ERROR');
  assert.match(blank.body.error.details[0].message, /empty/);
  // Someone else's conversation stays closed to a staff member, canned or not.
  const theirs = await insertConversation(d.app, guest);
  assertError(
    await call(d.app, 'POST', `/conversations/${theirs}/messages`, {
      token: d.staff.token,
      body: { cannedResponseId: canned.id },
    }),
    403,
    'FORBIDDEN',
  );
  // With a stay the stay placeholders name it (the guest's current stay, docs/stays.md).
  const stay = await call(d.app, 'POST', '/stays', {
    token: d.admin.token,
    body: { guestId: guest, room: '204', checkIn: '2030-05-01', checkOut: '2030-05-04' },
  });
  assert.equal(stay.status, 201, JSON.stringify(stay.body));
  const withStay = await send({ cannedResponseId: canned.id });
  assert.equal(
    withStay.data.content,
    'Dear Ana Maria Lopes (Ana): room [204] 2030-05-01-2030-05-04. Rui Costa, Hotel Miramar',
  );
});

test('API keys read canned responses with conversations:read and write them with conversations:write', async (t) => {
  const d = await desk(t);
  const key = async (scopes: string[]) => {
    const res = await call(d.app, 'POST', '/api-keys', { token: d.admin.token, body: { name: 'Desk app', scopes } });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return res.data.key as string;
  };
  const reader = await key(['conversations:read']);
  const writer = await key(['conversations:write']);
  const other = await key(['guests:read']);
  assertError(await call(d.app, 'POST', '/canned-responses', { token: reader, body: LATE }), 403, 'FORBIDDEN');
  const made = await call(d.app, 'POST', '/canned-responses', { token: writer, body: LATE });
  assert.equal(made.status, 201, JSON.stringify(made.body));
  assert.equal((await call(d.app, 'GET', '/canned-responses', { token: reader })).data.length, 1);
  assertError(await call(d.app, 'GET', '/canned-responses', { token: other }), 403, 'FORBIDDEN');
});
