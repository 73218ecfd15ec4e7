// OWASP API3:2023 Broken Object Property Level Authorization: no mass assignment (a field the
// caller may not set is refused and changes nothing) and no excessive data exposure (no response
// anywhere carries a password or its hash). Staff changing a conversation's assignee and a task's
// priority are also in test/modules/conversations.test.ts and tasks.test.ts; unknown body fields
// naming `password_hash` are in test/plugins/errors.test.ts.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { assertError } from '../fixtures.js';
import { call, createStaff } from '../helpers.js';
import { fill, operations, requiredQuery, world } from './support.js';

test('a staff member sending assignee, priority, role or other fields they may not change gets 403 and nothing changes', async (t) => {
  const w = await world(t);
  const { app, alice, bob, own } = w;
  const conv = `/conversations/${own.alice.conversation}`;
  const task = `/tasks/${own.alice.task}`;
  const cases: [string, string, unknown][] = [
    ['PATCH', conv, { assignee: bob.id }],
    ['PATCH', conv, { status: 'closed', assignee: alice.id }],
    ['PATCH', conv, { assignee: null }],
    ['PATCH', task, { priority: 'urgent' }],
    ['PATCH', task, { status: 'completed', assignee: bob.id }],
    ['PATCH', task, { notes: 'fine', department: 'maintenance' }],
    ['PATCH', task, { title: 'renamed' }],
    ['PATCH', task, { dueAt: '2030-01-01T00:00:00Z' }],
    ['PATCH', `/staff/${alice.id}`, { role: 'admin' }],
    ['PATCH', `/staff/${alice.id}`, { active: true }],
    ['PATCH', `/guests/${own.alice.guest}`, { name: 'Renamed' }],
    ['POST', '/conversations', { guestId: own.alice.guest, channel: 'sms', assignee: bob.id }],
  ];
  const before = await Promise.all(
    [conv, task, `/staff/${alice.id}`, `/guests/${own.alice.guest}`].map((u) =>
      call(app, 'GET', u, { token: w.admin.token }),
    ),
  );
  for (const [method, url, body] of cases) {
    assertError(
      await call(app, method as 'PATCH', url, { token: alice.token, body }),
      403,
      'FORBIDDEN',
      `${method} ${url} ${JSON.stringify(body)}`,
    );
  }
  const after = await Promise.all(
    [conv, task, `/staff/${alice.id}`, `/guests/${own.alice.guest}`].map((u) =>
      call(app, 'GET', u, { token: w.admin.token }),
    ),
  );
  assert.deepEqual(
    after.map((r) => r.data),
    before.map((r) => r.data),
  );
  const mine = await call(app, 'GET', '/conversations', { token: alice.token });
  assert.equal(mine.body.meta.total, 1, 'no conversation was created for bob');
});

test('a manager cannot grant roles: PATCH /staff and POST /staff are admin-only, the role unchanged', async (t) => {
  const w = await world(t);
  assertError(
    await call(w.app, 'PATCH', `/staff/${w.manager.id}`, { token: w.manager.token, body: { role: 'admin' } }),
    403,
    'FORBIDDEN',
  );
  assertError(
    await call(w.app, 'POST', '/staff', {
      token: w.manager.token,
      body: { name: 'Mole', email: 'mole@hotel.test', role: 'admin', password: 'long enough password' },
    }),
    403,
    'FORBIDDEN',
  );
  const me = await call(w.app, 'GET', '/auth/me', { token: w.manager.token });
  assert.equal(me.data.role, 'manager');
});

test('server-managed fields in a body are 400 naming them, for every role, and change nothing', async (t) => {
  const w = await world(t);
  const { app, admin, own } = w;
  const cases: [string, string, Record<string, unknown>, string][] = [
    ['POST', '/guests', { name: 'X', id: 'gst_mine' }, 'id'],
    ['POST', '/guests', { name: 'X', createdAt: '2000-01-01T00:00:00Z' }, 'createdAt'],
    ['PATCH', `/guests/${own.alice.guest}`, { updatedAt: '2000-01-01T00:00:00Z' }, 'updatedAt'],
    ['PATCH', `/tasks/${own.alice.task}`, { completedAt: '2000-01-01T00:00:00Z' }, 'completedAt'],
    ['PATCH', `/tasks/${own.alice.task}`, { status: 'open', id: 'tsk_other' }, 'id'],
    ['PATCH', `/conversations/${own.alice.conversation}`, { messageCount: 0 }, 'messageCount'],
    ['PATCH', `/conversations/${own.alice.conversation}`, { guestId: own.bob.guest }, 'guestId'],
    ['POST', `/conversations/${own.alice.conversation}/messages`, { content: 'x', direction: 'inbound' }, 'direction'],
    [
      'POST',
      `/conversations/${own.alice.conversation}/messages`,
      { content: 'x', sender: { type: 'guest' } },
      'sender',
    ],
    [
      'POST',
      `/conversations/${own.alice.conversation}/messages`,
      { content: 'x', deliveryStatus: 'delivered' },
      'deliveryStatus',
    ],
    ['PATCH', `/staff/${w.alice.id}`, { email: 'taken@hotel.test' }, 'email'],
    ['PATCH', `/staff/${w.alice.id}`, { passwordHash: '$argon2id$v=19$m=1,t=1,p=1$x$y' }, 'passwordHash'],
    ['PUT', '/settings/custom.x', { value: 1, updatedBy: w.alice.id }, 'updatedBy'],
    ['POST', '/knowledge', { title: 't', content: 'c', id: 'kb_mine' }, 'id'],
  ];
  for (const [method, url, body, field] of cases) {
    const res = await call(app, method as 'POST', url, { token: admin.token, body });
    assertError(res, 400, 'VALIDATION_ERROR', `${method} ${url}`);
    assert.ok(
      res.body.error.details.some((d: { field: string }) => d.field === field),
      `${method} ${url}: ${JSON.stringify(res.body.error.details)}`,
    );
  }
  const task = await call(app, 'GET', `/tasks/${own.alice.task}`, { token: admin.token });
  assert.equal(task.data.completedAt, null);
  const conv = await call(app, 'GET', `/conversations/${own.alice.conversation}`, { token: admin.token });
  assert.equal(conv.data.guestId, own.alice.guest);
});

const SECRET = /password|passwordHash|password_hash|\$argon2/i;

test('no GET response anywhere carries a password, a password hash or an argon2 string', async (t) => {
  const w = await world(t);
  const { app, admin } = w;
  // Members created every way a password is set: with one, without (temporary), and changed.
  await call(app, 'POST', '/staff', {
    token: admin.token,
    body: { name: 'With Chosen Secret', email: 'with@hotel.test', role: 'staff', password: 'a chosen passphrase' },
  });
  const temp = await call(app, 'POST', '/staff', {
    token: admin.token,
    body: { name: 'With Temporary Secret', email: 'temp@hotel.test', role: 'manager' },
  });
  assert.equal(typeof temp.data.temporaryPassword, 'string', 'the create answer shows it once');
  const changer = await createStaff(app, 'staff');
  const changed = await call(app, 'POST', '/auth/password', {
    token: changer.token,
    body: { currentPassword: 'correct horse battery staple', newPassword: 'another long passphrase' },
  });

  const ids: Record<string, string[]> = {};
  const gets = (await operations(app)).filter((o) => o.method === 'GET');
  const lists = gets.filter((o) => !o.path.includes('{'));
  let walked = 0;
  const check = async (url: string, token: string) => {
    const res = await call(app, 'GET', url, { token });
    assert.equal(res.status, 200, `${url}: ${res.raw.body}`);
    // The audit log's action name (docs/integrations.md) says a password changed, not what it is.
    assert.doesNotMatch(res.raw.body.replaceAll('"auth.password_changed"', '""'), SECRET, url);
    walked++;
    return res;
  };
  for (const o of lists) {
    const limit = o.op.parameters?.some((p: { name: string }) => p.name === 'limit') ? 'limit=100' : '';
    const query = [requiredQuery(o.op), limit].filter((q) => q !== '').join('&');
    const res = await check(`${o.path}${query === '' ? '' : `?${query}`}`, admin.token);
    if (Array.isArray(res.data))
      ids[o.path] = res.data.map((r: { id?: string; key?: string }) => String(r.id ?? r.key));
  }
  for (const o of gets.filter((g) => g.path.includes('{'))) {
    if (o.path.includes('{messageId}')) {
      await check(fill(o.path, { id: w.own.alice.conversation, messageId: w.own.alice.message }), admin.token);
      continue;
    }
    const base = o.path.replace(/\/\{\w+\}.*$/, '');
    for (const id of ids[base] ?? []) {
      await check(fill(o.path, { id, key: id }), admin.token);
    }
  }
  // Every role sees its own view; none of them carries a secret either.
  for (const u of [w.manager, w.alice]) await check('/api/v1/staff?limit=100', u.token);
  await check('/api/v1/auth/me', changed.data.token);
  assert.ok(walked >= 25, `walked only ${walked} responses`);
});
