// Tests what guests gain for a PMS (docs/stays.md): externalRef, typed attributes merged on PATCH,
// PUT /guests/by-ref/:externalRef, and exact look-ups by e-mail, phone and reference.
import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import { insertConversation } from '../fixtures.js';
import { buildTestApp, call, createStaff, type Res } from '../helpers.js';

async function setup(t: TestContext) {
  const app = await buildTestApp(t);
  const manager = await createStaff(app, 'manager');
  const staff = await createStaff(app, 'staff');
  return { app, manager, staff };
}

const fields = (res: Res) =>
  [...new Set(((res.body.error?.details ?? []) as { field: string }[]).map((d) => d.field))].sort();

test('attributes are typed, merged on PATCH, and a null removes a key', async (t) => {
  const { app, manager } = await setup(t);
  const made = await call(app, 'POST', '/guests', {
    token: manager.token,
    body: { name: 'Attr Guest', externalRef: 'P-1', attributes: { tier: 'gold', visits: 3, vip: true, gone: null } },
  });
  assert.equal(made.status, 201, JSON.stringify(made.body));
  assert.deepEqual(made.data.attributes, { tier: 'gold', visits: 3, vip: true });
  assert.equal(made.data.externalRef, 'P-1');
  const patched = await call(app, 'PATCH', `/guests/${made.data.id}`, {
    token: manager.token,
    body: { attributes: { visits: 4, vip: null, pillow: 'firm' } },
  });
  assert.deepEqual(patched.data.attributes, { tier: 'gold', visits: 4, pillow: 'firm' });
  const events = await call(app, 'GET', '/events?types=guest.updated', { token: manager.token });
  assert.deepEqual(events.data[0].changes.attributes.to, { tier: 'gold', visits: 4, pillow: 'firm' });

  const bad = async (attributes: unknown) =>
    fields(await call(app, 'PATCH', `/guests/${made.data.id}`, { token: manager.token, body: { attributes } }));
  assert.deepEqual(await bad({ 'Bad-Key': 1 }), ['attributes.Bad-Key']);
  assert.deepEqual(await bad({ ['a'.repeat(41)]: 1 }), [`attributes.${'a'.repeat(41)}`]);
  assert.deepEqual(await bad({ note: 'x'.repeat(501) }), ['attributes.note']);
  assert.deepEqual(await bad({ nested: { a: 1 } }), ['attributes.nested']);
  const many = Object.fromEntries(Array.from({ length: 48 }, (_, i) => [`k${i}`, i]));
  // 3 held + 48 new = 51 keys after the merge; removing one in the same body makes 50.
  assert.deepEqual(await bad(many), ['attributes']);
  const fifty = await call(app, 'PATCH', `/guests/${made.data.id}`, {
    token: manager.token,
    body: { attributes: { ...many, tier: null } },
  });
  assert.equal(fifty.status, 200);
  assert.equal(Object.keys(fifty.data.attributes).length, 50);

  const taken = await call(app, 'POST', '/guests', { token: manager.token, body: { name: 'Dup', externalRef: 'P-1' } });
  assert.equal(taken.status, 409);
  assert.deepEqual(taken.body.error.details[0], {
    field: 'externalRef',
    message: `is already used by guest ${made.data.id}`,
    existingId: made.data.id,
  });
});

test('PUT /guests/by-ref creates (201) then sets the given fields (200), keeping the rest', async (t) => {
  const { app, manager } = await setup(t);
  const put = (body: Record<string, unknown>) =>
    call(app, 'PUT', '/guests/by-ref/PROF-7', { token: manager.token, body });
  const first = await put({ name: 'Lena Fischer', email: 'lena@example.de', attributes: { tier: 'gold' } });
  assert.equal(first.status, 201, JSON.stringify(first.body));
  assert.equal(first.headers.location, `/api/v1/guests/${first.data.id}`);
  assert.equal(first.data.externalRef, 'PROF-7');
  await call(app, 'PATCH', `/guests/${first.data.id}`, {
    token: manager.token,
    body: { tags: ['vip'], notes: 'Kind' },
  });
  const tagged = (await call(app, 'GET', `/guests/${first.data.id}`, { token: manager.token })).data;
  const again = await put({ name: 'Lena Fischer', email: 'lena@example.de', attributes: { tier: 'gold' } });
  assert.equal(again.status, 200);
  assert.deepEqual(again.data, tagged, 'the same profile again changes nothing, not even updatedAt');
  const moved = await put({ name: 'Lena Fischer', phone: '+4915112345678', attributes: { lang: 'de' } });
  assert.deepEqual(
    [moved.data.email, moved.data.phone, moved.data.tags, moved.data.notes, moved.data.attributes],
    ['lena@example.de', '+4915112345678', ['vip'], 'Kind', { tier: 'gold', lang: 'de' }],
  );
  const events = await call(app, 'GET', '/events?types=guest.created,guest.updated', { token: manager.token });
  assert.deepEqual(
    events.data.map((e: { type: string }) => e.type),
    ['guest.created', 'guest.updated', 'guest.updated'],
  );
  // An address another guest holds is a 409 naming that guest.
  const other = await call(app, 'POST', '/guests', {
    token: manager.token,
    body: { name: 'O', email: 'o@example.com' },
  });
  const clash = await call(app, 'PUT', '/guests/by-ref/PROF-8', {
    token: manager.token,
    body: { name: 'New', email: 'O@example.com' },
  });
  assert.equal(clash.status, 409);
  assert.equal(clash.body.error.details[0].existingId, other.data.id);
  assert.deepEqual(fields(await put({ email: 'x@example.com' })), ['name']);
});

test('GET /guests finds exact matches by e-mail (any case), phone and externalRef', async (t) => {
  const { app, manager, staff } = await setup(t);
  const a = await call(app, 'POST', '/guests', {
    token: manager.token,
    body: { name: 'Ana', email: 'Ana@Example.com', phone: '+351912345678', externalRef: 'R-A' },
  });
  await call(app, 'POST', '/guests', {
    token: manager.token,
    body: { name: 'Anabela', email: 'anabela@example.com', phone: '+351912345679', externalRef: 'R-AB' },
  });
  const ids = async (query: string, token = manager.token) =>
    (await call(app, 'GET', `/guests?${query}`, { token })).data.map((g: { id: string }) => g.id);
  assert.deepEqual(await ids('email=ana%40EXAMPLE.com'), [a.data.id]);
  assert.deepEqual(await ids('phone=%2B351912345678'), [a.data.id]);
  assert.deepEqual(await ids('externalRef=R-A'), [a.data.id]);
  assert.deepEqual(await ids('externalRef=R'), []);
  assert.deepEqual(await ids('email=ana%40example.com&externalRef=R-AB'), []);
  // A staff member finds only guests they may see.
  assert.deepEqual(await ids('externalRef=R-A', staff.token), []);
  await insertConversation(app, a.data.id, { assignee: staff.id });
  assert.deepEqual(await ids('externalRef=R-A', staff.token), [a.data.id]);
});
