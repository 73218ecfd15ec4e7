// OWASP API1:2023 Broken Object Level Authorization. A staff-role caller may touch only what is
// assigned to them: someone else's object is 403, a missing one 404, and nothing
// changes. Single cases per module are in test/modules/{conversations,messages,tasks,guests,
// staff}.test.ts ("a staff member cannot read … assigned to someone else"); here every operation
// with an object id in its path, discovered from the OpenAPI document, is swept, and bulk items.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { newId } from '../../src/lib/ids.js';
import { png, tempStore, upload } from '../attachments/files.js';
import { assertError } from '../fixtures.js';
import { call } from '../helpers.js';
import { fill, operations, totals, world } from './support.js';

/** A body that would pass validation for each write a staff member may call on an object. */
const BODIES: Record<string, unknown> = {
  'PATCH /api/v1/conversations/{id}': { status: 'closed' },
  'POST /api/v1/conversations/{id}/messages': { content: 'sneaky' },
  'PATCH /api/v1/tasks/{id}': { status: 'completed' },
};

test("every object route a staff member may call answers 403 on another member's object, 404 on a missing one, and changes nothing", async (t) => {
  const w = await world(t, tempStore(t).env);
  // Bob's file is one his conversation's message carries: someone else's upload no message took
  // yet is answered as a missing id (test/attachments/messages.test.ts), not 403.
  const files = {
    alice: (await upload(w.app, w.alice.token, png())).data.id,
    bob: (await upload(w.app, w.bob.token, png())).data.id,
  };
  const carried = await call(w.app, 'POST', `/conversations/${w.own.bob.conversation}/messages`, {
    token: w.bob.token,
    body: { attachments: [files.bob] },
  });
  assert.equal(carried.status, 201, carried.raw.body);
  const before = await totals(w);
  const ops = (await operations(w.app)).filter(
    (o) => o.path.includes('{id}') && Array.isArray(o.roles) && o.roles.includes('staff'),
  );
  // The sweep must see the routes it is known to have, or it proves nothing.
  for (const known of [
    'GET /api/v1/conversations/{id}',
    'GET /api/v1/guests/{id}',
    'PATCH /api/v1/tasks/{id}',
    'GET /api/v1/stays/{id}',
  ]) {
    assert.ok(
      ops.some((o) => `${o.method} ${o.path}` === known),
      `sweep misses ${known}`,
    );
  }
  const bobs: Record<string, string> = {
    conversations: w.own.bob.conversation,
    guests: w.own.bob.guest,
    tasks: w.own.bob.task,
    stays: w.own.bob.stay,
    staff: w.bob.id,
    knowledge: '',
    attachments: files.bob,
  };
  const missing: Record<string, string> = {
    conversations: newId('cnv'),
    guests: newId('gst'),
    tasks: newId('tsk'),
    stays: newId('sty'),
    staff: newId('stf'),
    attachments: newId('att'),
  };
  let swept = 0;
  for (const o of ops) {
    const resource = o.path.split('/')[3]!;
    // Every role reads the whole knowledge base and every canned response.
    if (resource === 'knowledge' || resource === 'canned-responses') continue;
    const name = `${o.method} ${o.path}`;
    const body = BODIES[name] ?? (o.method === 'GET' ? undefined : {});
    const theirs = await call(w.app, o.method, fill(o.path, { id: bobs[resource]!, messageId: w.own.bob.message }), {
      token: w.alice.token,
      body,
    });
    assertError(theirs, 403, 'FORBIDDEN', `${name} on bob's`);
    const none = await call(w.app, o.method, fill(o.path, { id: missing[resource]!, messageId: w.own.alice.message }), {
      token: w.alice.token,
      body,
    });
    assertError(none, 404, 'NOT_FOUND', `${name} on a missing id`);
    // The control: the same request on alice's own object is allowed.
    const mine: Record<string, string> = {
      conversations: w.own.alice.conversation,
      guests: w.own.alice.guest,
      tasks: w.own.alice.task,
      stays: w.own.alice.stay,
      staff: w.alice.id,
      attachments: files.alice,
    };
    const own = await call(w.app, o.method, fill(o.path, { id: mine[resource]!, messageId: w.own.alice.message }), {
      token: w.alice.token,
      body,
    });
    // A retry of alice's own message passes the access check and meets the state rule: a note is not retried.
    const allowed = own.status < 300 || (o.path.endsWith('/retry') && own.body.error?.code === 'CONFLICT');
    assert.ok(allowed, `${name} on alice's own: ${own.status} ${JSON.stringify(own.body)}`);
    swept++;
  }
  assert.ok(swept >= 6, `only ${swept} operations swept`);
  // Bob's records are as they were (alice's own writes changed only hers).
  const after = await totals(w);
  const bobRows = (rows: unknown) =>
    (rows as string[]).filter((r) => Object.values(w.own.bob).some((id) => r.startsWith(id)));
  for (const list of ['/conversations', '/tasks', '/guests'])
    assert.deepEqual(bobRows(after[list]), bobRows(before[list]), list);
  assert.deepEqual(after[w.own.bob.conversation], before[w.own.bob.conversation], "bob's messages");
});

test("bulk items naming another member's conversation fail on their own with 403; alice's own succeed", async (t) => {
  const w = await world(t);
  const res = await call(w.app, 'PATCH', '/conversations/bulk', {
    token: w.alice.token,
    body: {
      items: [
        { id: w.own.bob.conversation, status: 'closed' },
        { id: w.own.alice.conversation, status: 'pending' },
        { id: newId('cnv'), status: 'closed' },
        { id: w.own.bob.task, status: 'closed' },
      ],
    },
  });
  assert.equal(res.status, 200);
  assert.deepEqual(
    res.data.map((r: { error?: { code: string } }) => r.error?.code ?? 'ok'),
    ['FORBIDDEN', 'ok', 'NOT_FOUND', 'NOT_FOUND'],
  );
  const bobs = await call(w.app, 'GET', `/conversations/${w.own.bob.conversation}`, { token: w.admin.token });
  assert.equal(bobs.data.status, 'open');
});

test("bulk-created tasks cannot smuggle in ids of records that do not exist; a manager's bulk names them per item", async (t) => {
  const w = await world(t);
  const res = await call(w.app, 'POST', '/tasks/bulk', {
    token: w.manager.token,
    body: {
      items: [
        { title: 'ok', department: 'housekeeping', guestId: w.own.bob.guest, conversationId: w.own.bob.conversation },
        {
          title: 'cross',
          department: 'housekeeping',
          guestId: w.own.alice.guest,
          conversationId: w.own.bob.conversation,
        },
        { title: 'ghost', department: 'housekeeping', guestId: newId('gst') },
      ],
    },
  });
  assert.equal(res.status, 200);
  assert.deepEqual(
    res.data.map((r: { error?: { code: string } }) => r.error?.code ?? 'ok'),
    ['ok', 'VALIDATION_ERROR', 'VALIDATION_ERROR'],
  );
});

test('a staff member lists only their own objects whatever filter names another member', async (t) => {
  // The per-module versions: test/modules/conversations.test.ts and tasks.test.ts ("lists only …
  // assigned to them, whatever the filter"); here the filter names bob explicitly.
  const w = await world(t);
  for (const url of [`/conversations?assignee=${w.bob.id}`, `/tasks?assignee=${w.bob.id}`, '/guests?search=bob']) {
    const res = await call(w.app, 'GET', url, { token: w.alice.token });
    assert.equal(res.status, 200, url);
    assert.equal(res.body.meta.total, 0, url);
  }
  const staff = await call(w.app, 'GET', '/staff?limit=100', { token: w.alice.token });
  assert.deepEqual(
    staff.data.map((s: { id: string }) => s.id),
    [w.alice.id],
  );
});
