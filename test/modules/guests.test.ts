// Rules of /guests, through HTTP: shape, validation, uniqueness, lists, updates, roles and bulk.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { newId } from '../../src/lib/ids.js';
import { insertConversation, insertTask } from '../fixtures.js';
import { assertPagesAgree, buildTestApp, call, createStaff } from '../helpers.js';

const GUEST_ID = /^gst_[0-9a-hjkmnp-tv-z]{26}$/;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

async function setup(t: Parameters<typeof buildTestApp>[0], env: Record<string, string> = {}) {
  const app = await buildTestApp(t, env);
  const admin = await createStaff(app, 'admin');
  return { app, admin };
}

async function newGuest(app: FastifyInstance, token: string, body: Record<string, unknown>) {
  const res = await call(app, 'POST', '/guests', { token, body });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.data as { id: string; name: string };
}

const fieldsOf = (body: { error: { details: { field: string }[] } }) => body.error.details.map((d) => d.field);

test('an admin creates a guest with every field and gets it back in the documented shape', async (t) => {
  const { app, admin } = await setup(t);
  const res = await call(app, 'POST', '/guests', {
    token: admin.token,
    body: {
      name: 'Ana Souza',
      email: 'Ana.Souza@Example.com',
      phone: '+5511987654321',
      tags: ['vip', 'late-checkout', 'vip'],
      notes: 'Allergic to feathers',
    },
  });
  assert.equal(res.status, 201);
  assert.equal(res.body.success, true);
  const g = res.data;
  assert.deepEqual(Object.keys(g).sort(), [
    'attributes',
    'createdAt',
    'email',
    'externalRef',
    'id',
    'name',
    'notes',
    'phone',
    'stay',
    'tags',
    'updatedAt',
  ]);
  assert.match(g.id, GUEST_ID);
  assert.equal(g.name, 'Ana Souza');
  assert.equal(g.email, 'Ana.Souza@Example.com');
  assert.equal(g.phone, '+5511987654321');
  assert.deepEqual(g.tags, ['vip', 'late-checkout'], 'tags are de-duplicated in first-seen order');
  assert.equal(g.notes, 'Allergic to feathers');
  assert.match(g.createdAt, ISO);
  assert.equal(g.updatedAt, g.createdAt);

  const got = await call(app, 'GET', `/guests/${g.id}`, { token: admin.token });
  assert.equal(got.status, 200);
  assert.deepEqual(got.data, g);
});

test('a manager may create a guest with only a name; the rest is null or empty', async (t) => {
  const { app } = await setup(t);
  const manager = await createStaff(app, 'manager');
  const res = await call(app, 'POST', '/guests', { token: manager.token, body: { name: 'Bo' } });
  assert.equal(res.status, 201);
  assert.deepEqual(
    { email: res.data.email, phone: res.data.phone, tags: res.data.tags, notes: res.data.notes },
    { email: null, phone: null, tags: [], notes: null },
  );
});

test('an invalid create body is a 400 VALIDATION_ERROR naming the bad field', async (t) => {
  const { app, admin } = await setup(t);
  const cases: [string, Record<string, unknown>, string][] = [
    ['missing name', { email: 'a@b.test' }, 'name'],
    ['empty name', { name: '' }, 'name'],
    ['name too long', { name: 'x'.repeat(201) }, 'name'],
    ['bad email', { name: 'A', email: 'not-an-email' }, 'email'],
    ['bad phone (no plus)', { name: 'A', phone: '447700900123' }, 'phone'],
    ['bad phone (too short)', { name: 'A', phone: '+12345' }, 'phone'],
    ['unknown field', { name: 'A', vip: true }, 'vip'],
    ['tag too long', { name: 'A', tags: ['ok', 'x'.repeat(51)] }, 'tags.1'],
    ['empty tag', { name: 'A', tags: [''] }, 'tags.0'],
    ['too many tags', { name: 'A', tags: Array.from({ length: 51 }, (_, i) => `t${i}`) }, 'tags'],
    ['name not a string', { name: 42 }, 'name'],
    ['tags not an array', { name: 'A', tags: 'vip' }, 'tags'],
    ['tag not a string', { name: 'A', tags: [1] }, 'tags.0'],
    ['notes too long', { name: 'A', notes: 'x'.repeat(10_001) }, 'notes'],
  ];
  for (const [what, body, field] of cases) {
    const res = await call(app, 'POST', '/guests', { token: admin.token, body });
    assert.equal(res.status, 400, what);
    assert.equal(res.body.error.code, 'VALIDATION_ERROR', what);
    assert.ok(fieldsOf(res.body).includes(field), `${what}: ${JSON.stringify(res.body.error.details)}`);
  }
  const list = await call(app, 'GET', '/guests', { token: admin.token });
  assert.equal(list.body.meta.total, 0, 'nothing invalid was stored');
});

test('a body with several bad fields names every one of them', async (t) => {
  const { app, admin } = await setup(t);
  const res = await call(app, 'POST', '/guests', {
    token: admin.token,
    body: { email: 'nope', phone: '123', extra: 1 },
  });
  assert.equal(res.status, 400);
  assert.deepEqual(new Set(fieldsOf(res.body)), new Set(['name', 'email', 'phone', 'extra']));
});

test('a second guest with the same e-mail in another case, or the same phone, is a 409 naming the existing guest', async (t) => {
  const { app, admin } = await setup(t);
  const first = await newGuest(app, admin.token, { name: 'First', email: 'guest@hotel.test', phone: '+447700900123' });

  const byEmail = await call(app, 'POST', '/guests', {
    token: admin.token,
    body: { name: 'Second', email: 'GUEST@Hotel.Test' },
  });
  assert.equal(byEmail.status, 409);
  assert.equal(byEmail.body.error.code, 'CONFLICT');
  assert.deepEqual(byEmail.body.error.details, [
    { field: 'email', message: `is already used by guest ${first.id}`, existingId: first.id },
  ]);

  const byPhone = await call(app, 'POST', '/guests', {
    token: admin.token,
    body: { name: 'Third', phone: '+447700900123' },
  });
  assert.equal(byPhone.status, 409);
  assert.deepEqual(
    byPhone.body.error.details.map((d: { field: string; existingId: string }) => [d.field, d.existingId]),
    [['phone', first.id]],
  );

  const both = await call(app, 'POST', '/guests', {
    token: admin.token,
    body: { name: 'Fourth', email: 'guest@hotel.test', phone: '+447700900123' },
  });
  assert.deepEqual(
    both.body.error.details.map((d: { field: string }) => d.field),
    ['email', 'phone'],
  );

  const list = await call(app, 'GET', '/guests', { token: admin.token });
  assert.equal(list.body.meta.total, 1);
});

test('concurrent creates with one e-mail store one guest; the others get 409 naming it', async (t) => {
  const { app, admin } = await setup(t);
  const results = await Promise.all(
    Array.from({ length: 5 }, (_, i) =>
      call(app, 'POST', '/guests', { token: admin.token, body: { name: `Racer ${i}`, email: 'race@hotel.test' } }),
    ),
  );
  const created = results.filter((r) => r.status === 201);
  assert.equal(created.length, 1);
  for (const r of results.filter((x) => x.status !== 201)) {
    assert.equal(r.status, 409, JSON.stringify(r.body));
    assert.equal(r.body.error.details[0].existingId, created[0]!.data.id);
  }
});

test('the list pages newest first with page, limit, total and pages; past the end is empty', async (t) => {
  const { app, admin } = await setup(t);
  const ids: string[] = [];
  for (let i = 1; i <= 5; i++) ids.push((await newGuest(app, admin.token, { name: `Guest ${i}` })).id);
  const newestFirst = [...ids].reverse();

  const all = await call(app, 'GET', '/guests', { token: admin.token });
  assert.deepEqual(all.body.meta, { page: 1, limit: 20, total: 5, pages: 1, nextCursor: null });
  assert.deepEqual(
    all.data.map((g: { id: string }) => g.id),
    newestFirst,
  );

  const p2 = await call(app, 'GET', '/guests?page=2&limit=2', { token: admin.token });
  assert.equal(p2.status, 200);
  assert.deepEqual(
    { ...p2.body.meta, nextCursor: typeof p2.body.meta.nextCursor },
    { page: 2, limit: 2, total: 5, pages: 3, nextCursor: 'string' },
  );
  assert.deepEqual(
    p2.data.map((g: { id: string }) => g.id),
    newestFirst.slice(2, 4),
  );

  const past = await call(app, 'GET', '/guests?page=4&limit=2', { token: admin.token });
  assert.equal(past.status, 200);
  assert.deepEqual(past.data, []);
  assert.deepEqual(past.body.meta, { page: 4, limit: 2, total: 5, pages: 3, nextCursor: null });
  await assertPagesAgree(app, admin.token, '/guests', newestFirst);
});

test('list query values out of range or unknown are a 400 naming the parameter', async (t) => {
  const { app, admin } = await setup(t);
  for (const [qs, field] of [
    ['page=0', 'page'],
    ['limit=101', 'limit'],
    ['limit=abc', 'limit'],
    ['sort=name', 'sort'],
    ['tag=', 'tag'],
  ] as const) {
    const res = await call(app, 'GET', `/guests?${qs}`, { token: admin.token });
    assert.equal(res.status, 400, qs);
    assert.ok(fieldsOf(res.body).includes(field), `${qs}: ${JSON.stringify(res.body.error.details)}`);
  }
});

test('search matches a fragment of the name, e-mail or phone in any case', async (t) => {
  const { app, admin } = await setup(t);
  const ana = await newGuest(app, admin.token, { name: 'Ana Souza', email: 'ana@rio.test', phone: '+5511987654321' });
  const ben = await newGuest(app, admin.token, {
    name: 'Ben Okafor',
    email: 'BEN@Lagos.test',
    phone: '+2348031234567',
  });
  const search = async (term: string) => {
    const res = await call(app, 'GET', `/guests?search=${encodeURIComponent(term)}`, { token: admin.token });
    assert.equal(res.status, 200);
    return res.data.map((g: { id: string }) => g.id);
  };
  assert.deepEqual(await search('souz'), [ana.id]);
  assert.deepEqual(await search('OKAF'), [ben.id]);
  assert.deepEqual(await search('lagos.TEST'), [ben.id]);
  assert.deepEqual(await search('+55119'), [ana.id]);
  assert.deepEqual(await search('803123'), [ben.id]);
  assert.deepEqual(await search('.test'), [ben.id, ana.id]);
  assert.deepEqual(await search('nobody'), []);
});

test('in search, % and _ match only themselves', async (t) => {
  const { app, admin } = await setup(t);
  const pct = await newGuest(app, admin.token, { name: '100% Sure' });
  await newGuest(app, admin.token, { name: '1000 Sure' });
  const under = await newGuest(app, admin.token, { name: 'Under', email: 'a_b@hotel.test' });
  await newGuest(app, admin.token, { name: 'Other', email: 'axb@hotel.test' });
  const ids = async (term: string) =>
    (await call(app, 'GET', `/guests?search=${encodeURIComponent(term)}`, { token: admin.token })).data.map(
      (g: { id: string }) => g.id,
    );
  assert.deepEqual(await ids('%'), [pct.id]);
  assert.deepEqual(await ids('0% s'), [pct.id]);
  assert.deepEqual(await ids('a_b'), [under.id]);
  assert.deepEqual(await ids('_'), [under.id]);
});

test('the tag filter selects guests carrying exactly that tag, and combines with search', async (t) => {
  const { app, admin } = await setup(t);
  const a = await newGuest(app, admin.token, { name: 'Alpha', tags: ['vip', 'allergy'] });
  const b = await newGuest(app, admin.token, { name: 'Beta', tags: ['vip'] });
  await newGuest(app, admin.token, { name: 'Gamma', tags: ['vip-gold'] });
  await newGuest(app, admin.token, { name: 'Delta' });
  const tagged = async (qs: string) => {
    const res = await call(app, 'GET', `/guests?${qs}`, { token: admin.token });
    assert.equal(res.status, 200);
    return { ids: res.data.map((g: { id: string }) => g.id), total: res.body.meta.total };
  };
  assert.deepEqual(await tagged('tag=vip'), { ids: [b.id, a.id], total: 2 });
  assert.deepEqual(await tagged('tag=allergy'), { ids: [a.id], total: 1 });
  assert.deepEqual(await tagged('tag=vip&search=alp'), { ids: [a.id], total: 1 });
  assert.deepEqual(await tagged('tag=none'), { ids: [], total: 0 });
});

test('PATCH changes each field; tags replace the set and e-mail, phone and notes can be cleared', async (t) => {
  const { app, admin } = await setup(t);
  const g = await newGuest(app, admin.token, {
    name: 'Carla',
    email: 'carla@hotel.test',
    phone: '+351912345678',
    tags: ['vip', 'allergy'],
    notes: 'first stay',
  });
  const patch = (body: unknown) => call(app, 'PATCH', `/guests/${g.id}`, { token: admin.token, body });
  const ids = async (qs: string) =>
    (await call(app, 'GET', `/guests?${qs}`, { token: admin.token })).data.map((x: { id: string }) => x.id);

  const renamed = await patch({ name: 'Carla Mendes' });
  assert.equal(renamed.status, 200);
  assert.equal(renamed.data.name, 'Carla Mendes');
  assert.equal(renamed.data.email, 'carla@hotel.test', 'fields not sent are unchanged');
  assert.deepEqual(await ids('search=mendes'), [g.id], 'search follows the new name');

  const retagged = await patch({ tags: ['returning', 'returning', 'quiet-room'] });
  assert.deepEqual(retagged.data.tags, ['returning', 'quiet-room']);
  assert.deepEqual(await ids('tag=vip'), [], 'the old tags no longer match');
  assert.deepEqual(await ids('tag=quiet-room'), [g.id]);

  const noted = await patch({ notes: 'prefers high floor' });
  assert.equal(noted.data.notes, 'prefers high floor');

  const moved = await patch({ email: 'carla@new.test', phone: '+351912000000' });
  assert.equal(moved.data.email, 'carla@new.test');
  assert.equal(moved.data.phone, '+351912000000');

  const cleared = await patch({ email: null, phone: null, notes: null });
  assert.equal(cleared.status, 200);
  assert.deepEqual(
    { email: cleared.data.email, phone: cleared.data.phone, notes: cleared.data.notes },
    { email: null, phone: null, notes: null },
  );
  assert.deepEqual(await ids('search=new.test'), [], 'a cleared e-mail is no longer searched');
  assert.ok(cleared.data.updatedAt >= cleared.data.createdAt);

  const got = await call(app, 'GET', `/guests/${g.id}`, { token: admin.token });
  assert.deepEqual(got.data, cleared.data);

  // The cleared e-mail is free for another guest.
  await newGuest(app, admin.token, { name: 'Other', email: 'CARLA@new.test' });
});

test('PATCH to an e-mail or phone another guest holds is a 409; its own e-mail in another case is fine', async (t) => {
  const { app, admin } = await setup(t);
  const a = await newGuest(app, admin.token, { name: 'A', email: 'a@hotel.test', phone: '+15550000001' });
  const b = await newGuest(app, admin.token, { name: 'B', email: 'b@hotel.test' });

  const email = await call(app, 'PATCH', `/guests/${b.id}`, { token: admin.token, body: { email: 'A@HOTEL.test' } });
  assert.equal(email.status, 409);
  assert.deepEqual(email.body.error.details, [
    { field: 'email', message: `is already used by guest ${a.id}`, existingId: a.id },
  ]);
  const phone = await call(app, 'PATCH', `/guests/${b.id}`, { token: admin.token, body: { phone: '+15550000001' } });
  assert.equal(phone.status, 409);
  assert.equal(phone.body.error.details[0].existingId, a.id);

  const self = await call(app, 'PATCH', `/guests/${a.id}`, {
    token: admin.token,
    body: { email: 'A@Hotel.Test', phone: '+15550000001' },
  });
  assert.equal(self.status, 200);
  assert.equal(self.data.email, 'A@Hotel.Test');

  const unchanged = await call(app, 'GET', `/guests/${b.id}`, { token: admin.token });
  assert.equal(unchanged.data.email, 'b@hotel.test');
});

test('PATCH needs at least one known field, and an unknown id is a 404', async (t) => {
  const { app, admin } = await setup(t);
  const g = await newGuest(app, admin.token, { name: 'A' });
  const empty = await call(app, 'PATCH', `/guests/${g.id}`, { token: admin.token, body: {} });
  assert.equal(empty.status, 400);
  assert.equal(empty.body.error.code, 'VALIDATION_ERROR');
  const unknown = await call(app, 'PATCH', `/guests/${g.id}`, { token: admin.token, body: { vip: true } });
  assert.equal(unknown.status, 400);
  assert.ok(fieldsOf(unknown.body).includes('vip'));
  const nullName = await call(app, 'PATCH', `/guests/${g.id}`, { token: admin.token, body: { name: null } });
  assert.equal(nullName.status, 400);
  assert.ok(fieldsOf(nullName.body).includes('name'));
  const missing = await call(app, 'PATCH', `/guests/${newId('gst')}`, { token: admin.token, body: { name: 'X' } });
  assert.equal(missing.status, 404);
  assert.equal(missing.body.error.code, 'NOT_FOUND');
  const get = await call(app, 'GET', `/guests/${newId('gst')}`, { token: admin.token });
  assert.equal(get.status, 404);
});

test('a staff member cannot create, update or bulk-create guests', async (t) => {
  const { app, admin } = await setup(t);
  const staff = await createStaff(app, 'staff');
  const g = await newGuest(app, admin.token, { name: 'A' });
  const create = await call(app, 'POST', '/guests', { token: staff.token, body: { name: 'B' } });
  assert.equal(create.status, 403);
  assert.equal(create.body.error.code, 'FORBIDDEN');
  const update = await call(app, 'PATCH', `/guests/${g.id}`, { token: staff.token, body: { name: 'C' } });
  assert.equal(update.status, 403);
  const bulk = await call(app, 'POST', '/guests/bulk', { token: staff.token, body: { items: [{ name: 'D' }] } });
  assert.equal(bulk.status, 403);
  const list = await call(app, 'GET', '/guests', { token: admin.token });
  assert.deepEqual(
    list.data.map((x: { name: string }) => x.name),
    ['A'],
  );
});

test('a staff member sees only guests of conversations or tasks assigned to them', async (t) => {
  const { app, admin } = await setup(t);
  const staff = await createStaff(app, 'staff');
  const other = await createStaff(app, 'staff');
  const viaConversation = await newGuest(app, admin.token, { name: 'Via Conversation' });
  const viaTask = await newGuest(app, admin.token, { name: 'Via Task' });
  const someoneElses = await newGuest(app, admin.token, { name: 'Someone Elses' });
  const unassigned = await newGuest(app, admin.token, { name: 'Unassigned' });
  await insertConversation(app, viaConversation.id, { channel: 'sms', assignee: staff.id });
  await insertConversation(app, viaConversation.id, { channel: 'sms', assignee: staff.id });
  await insertTask(app, viaTask.id, staff.id);
  await insertConversation(app, someoneElses.id, { channel: 'sms', assignee: other.id });
  await insertTask(app, someoneElses.id, other.id);
  await insertConversation(app, unassigned.id, { channel: 'sms', assignee: null });

  const mine = await call(app, 'GET', '/guests', { token: staff.token });
  assert.equal(mine.status, 200);
  assert.deepEqual(
    mine.data.map((g: { id: string }) => g.id),
    [viaTask.id, viaConversation.id],
    'each guest once, newest first',
  );
  assert.equal(mine.body.meta.total, 2);
  const searched = await call(app, 'GET', '/guests?search=task', { token: staff.token });
  assert.deepEqual(
    searched.data.map((g: { id: string }) => g.id),
    [viaTask.id],
  );

  const all = await call(app, 'GET', '/guests', { token: admin.token });
  assert.equal(all.body.meta.total, 4, 'an admin sees every guest');

  assert.equal((await call(app, 'GET', `/guests/${viaConversation.id}`, { token: staff.token })).status, 200);
  assert.equal((await call(app, 'GET', `/guests/${viaTask.id}`, { token: staff.token })).status, 200);
  const forbidden = await call(app, 'GET', `/guests/${someoneElses.id}`, { token: staff.token });
  assert.equal(forbidden.status, 403);
  assert.equal(forbidden.body.error.code, 'FORBIDDEN');
  assert.equal((await call(app, 'GET', `/guests/${unassigned.id}`, { token: staff.token })).status, 403);
  const missing = await call(app, 'GET', `/guests/${newId('gst')}`, { token: staff.token });
  assert.equal(missing.status, 404);
});

test('bulk create answers every item in order and stores only the valid ones', async (t) => {
  const { app, admin } = await setup(t);
  const res = await call(app, 'POST', '/guests/bulk', {
    token: admin.token,
    body: {
      items: [
        { name: 'One', email: 'one@hotel.test', tags: ['a', 'a'] },
        { email: 'no-name@hotel.test' },
        { name: 'One again', email: 'ONE@hotel.test' },
        { name: 'Two', phone: '+447700900111', vip: true },
        { name: 'Three', phone: '+447700900222' },
      ],
    },
  });
  assert.equal(res.status, 200);
  assert.equal(res.body.success, true);
  const out = res.data as { index: number; success: boolean; data?: { id: string }; error?: { code: string } }[];
  assert.deepEqual(
    out.map((r) => [r.index, r.success, r.error?.code]),
    [
      [0, true, undefined],
      [1, false, 'VALIDATION_ERROR'],
      [2, false, 'CONFLICT'],
      [3, false, 'VALIDATION_ERROR'],
      [4, true, undefined],
    ],
  );
  assert.deepEqual(res.data[0].data.tags, ['a']);
  assert.ok(fieldsOf({ error: res.data[1].error }).includes('name'));
  assert.equal(res.data[2].error.details[0].existingId, res.data[0].data.id);
  assert.ok(fieldsOf({ error: res.data[3].error }).includes('vip'));

  const list = await call(app, 'GET', '/guests', { token: admin.token });
  assert.deepEqual(
    list.data.map((g: { name: string }) => g.name),
    ['Three', 'One'],
  );
});

test('bulk create takes 1 to 100 items', async (t) => {
  const { app, admin } = await setup(t);
  for (const n of [0, 101]) {
    const items = Array.from({ length: n }, (_, i) => ({ name: `G${i}` }));
    const res = await call(app, 'POST', '/guests/bulk', { token: admin.token, body: { items } });
    assert.equal(res.status, 400, `${n} items`);
    assert.ok(fieldsOf(res.body).includes('items'), JSON.stringify(res.body.error.details));
  }
  const missing = await call(app, 'POST', '/guests/bulk', { token: admin.token, body: {} });
  assert.equal(missing.status, 400);
  const list = await call(app, 'GET', '/guests', { token: admin.token });
  assert.equal(list.body.meta.total, 0);
});

test('bulk create counts in the bulk rate-limit bucket, apart from the standard one', async (t) => {
  const { app, admin } = await setup(t);
  const first = await call(app, 'POST', '/guests/bulk', { token: admin.token, body: { items: [{ name: 'A' }] } });
  assert.equal(first.status, 200);
  assert.equal(first.headers['x-ratelimit-limit'], '10');
  assert.equal(first.headers['x-ratelimit-remaining'], '9');
  const standard = await call(app, 'GET', '/guests', { token: admin.token });
  assert.equal(standard.headers['x-ratelimit-limit'], '100');

  const { app: tight, admin: tightAdmin } = await setup(t, { RATE_LIMIT_BULK: '2' });
  const statuses: number[] = [];
  for (let i = 0; i < 3; i++) {
    const r = await call(tight, 'POST', '/guests/bulk', {
      token: tightAdmin.token,
      body: { items: [{ name: `G${i}` }] },
    });
    statuses.push(r.status);
    if (r.status === 429) assert.equal(r.body.error.code, 'RATE_LIMITED');
  }
  assert.deepEqual(statuses, [200, 200, 429]);
  const afterwards = await call(tight, 'POST', '/guests', { token: tightAdmin.token, body: { name: 'Single' } });
  assert.equal(afterwards.status, 201, 'single creates are in the standard bucket');
});

test("a tag's and a search's guests page and walk alike for the manager and a staff member", async (t) => {
  const { app, admin } = await setup(t, { RATE_LIMIT_STANDARD: '10000' });
  const staff = await createStaff(app, 'staff');
  const other = await createStaff(app, 'staff');
  const made: { id: string; name: string; tags: string[]; mine: boolean }[] = [];
  for (let i = 0; i < 24; i++) {
    const name = `${i % 3 === 0 ? 'Ann Baker' : 'Bo Smith'} ${i}`;
    const tags = i % 2 === 0 ? ['vip'] : i % 5 === 0 ? ['late', 'vip'] : [];
    const g = await newGuest(app, admin.token, { name, tags });
    const mine = i % 4 !== 1;
    if (mine) await insertConversation(app, g.id, { channel: 'sms', assignee: staff.id });
    else await insertTask(app, g.id, other.id);
    made.push({ id: g.id, name, tags, mine });
  }
  // A tag given later (written with the guest's own created_at) and one taken away.
  for (const i of [3, 4]) {
    const tags = i === 3 ? ['vip'] : [];
    const res = await call(app, 'PATCH', `/guests/${made[i]!.id}`, { token: admin.token, body: { tags } });
    assert.equal(res.status, 200, res.raw.body);
    made[i]!.tags = tags;
  }
  const newest = [...made].reverse();
  const cases: [string, boolean, (g: (typeof made)[number]) => boolean][] = [
    ['tag=vip', false, (g) => g.tags.includes('vip')],
    ['tag=vip', true, (g) => g.tags.includes('vip')],
    ['search=baker', true, (g) => g.name.includes('Baker')],
    ['tag=vip&search=baker', true, (g) => g.tags.includes('vip') && g.name.includes('Baker')],
    ['tag=vip&search=baker', false, (g) => g.tags.includes('vip') && g.name.includes('Baker')],
    ['search=n%20', true, (g) => g.name.toLowerCase().includes('n ')],
  ];
  for (const [filter, asStaff, keep] of cases) {
    const want = newest.filter((g) => keep(g) && (!asStaff || g.mine)).map((g) => g.id);
    assert.ok(want.length >= 3, `${filter}: a few guests`);
    const token = asStaff ? staff.token : admin.token;
    const who = `${filter} as ${asStaff ? 'staff' : 'manager'}`;
    const pages: string[] = [];
    for (let page = 1; page <= Math.ceil(want.length / 3) + 1; page++) {
      const res = await call(app, 'GET', `/guests?${filter}&limit=3&page=${page}`, { token });
      assert.equal(res.status, 200, res.raw.body);
      assert.equal(res.body.meta.total, want.length, who);
      pages.push(...res.data.map((g: { id: string }) => g.id));
    }
    assert.deepEqual(pages, want, `${who}: numbered pages`);
    const walked: string[] = [];
    let url: string | null = `/guests?${filter}&limit=2`;
    while (url !== null) {
      const res = await call(app, 'GET', url, { token });
      assert.equal(res.status, 200, res.raw.body);
      walked.push(...res.data.map((g: { id: string }) => g.id));
      const cursor = res.body.meta.nextCursor as string | null;
      url = cursor === null ? null : `/guests?${filter}&limit=2&cursor=${encodeURIComponent(cursor)}`;
    }
    assert.deepEqual(walked, want, `${who}: cursor walk`);
  }
});
