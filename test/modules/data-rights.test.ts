// Guest data rights (docs/data-rights.md): the export holds everything about the guest; the erase
// leaves nothing personal anywhere the API can show it (nor in any table of the store), answers the
// same guest again, and the guest's address writing again is a new guest.
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type TestContext, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { CompiledQuery } from 'kysely';
import { newId } from '../../src/lib/ids.js';
import { fetchLink, png, tempStore, upload } from '../attachments/files.js';
import { assertError, openConversation } from '../fixtures.js';
import { buildTestApp, call, createStaff, TEST_STORE, type TestUser } from '../helpers.js';

/** Everything personal the guest's records hold, each found in some record before the erase. */
const PERSONAL = {
  name: 'Ana Pereira',
  email: 'ana.pereira@example.pt',
  phone: '+351912345678',
  notes: 'Prefers a room near the lift',
  attribute: 'Gold-4471',
  externalRef: 'PROF-55120',
  tag: 'wheelchair',
  subject: 'Booking Pereira',
  inbound: 'My passport is AB1234567',
  outbound: 'Thank you Ana, see you Friday',
  note: 'Nervous flyer, be gentle',
  web: 'Writing from the website chat',
  filename: 'ana-passport.png',
  stayNotes: 'Nut allergy',
};

interface World {
  app: FastifyInstance;
  admin: TestUser;
  manager: TestUser;
  staff: TestUser;
  guestId: string;
  conversationId: string;
  attachmentUrl: string;
  attachmentId: string;
  widget: string;
  /** The folder holding attachment contents. */
  files: string;
}

const key = async (app: FastifyInstance, admin: TestUser, scopes: string[]) => {
  const res = await call(app, 'POST', '/api-keys', { token: admin.token, body: { name: scopes.join(' '), scopes } });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.data.key as string;
};

/** A guest with every kind of record: stay, task, e-mail and web conversations, a file, events. */
async function world(t: TestContext, env: Record<string, string> = {}): Promise<World> {
  const files = tempStore(t);
  const app = await buildTestApp(t, { CHANNELS_DRY_RUN: 'true', ...files.env, ...env });
  const [admin, manager, staff] = await Promise.all([
    createStaff(app, 'admin'),
    createStaff(app, 'manager'),
    createStaff(app, 'staff'),
  ]);
  const created = await call(app, 'POST', '/guests', {
    token: admin.token,
    headers: { 'idempotency-key': 'guest-ana-1' },
    body: {
      name: PERSONAL.name,
      email: PERSONAL.email,
      phone: PERSONAL.phone,
      notes: PERSONAL.notes,
      tags: [PERSONAL.tag],
      attributes: { loyalty: PERSONAL.attribute },
    },
  });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const guestId = created.data.id as string;
  const patched = await call(app, 'PATCH', `/guests/${guestId}`, {
    token: admin.token,
    body: { externalRef: PERSONAL.externalRef },
  });
  assert.equal(patched.status, 200, JSON.stringify(patched.body));
  const stay = await call(app, 'POST', '/stays', {
    token: admin.token,
    body: { guestId, checkIn: '2026-12-04', checkOut: '2026-12-06', room: '12', notes: PERSONAL.stayNotes },
  });
  assert.equal(stay.status, 201, JSON.stringify(stay.body));
  const c = await openConversation(app, admin.token, {
    guestId,
    channel: 'email',
    subject: PERSONAL.subject,
    assignee: staff.id,
  });
  const file = await upload(app, admin.token, png(), PERSONAL.filename);
  assert.equal(file.status, 201, JSON.stringify(file.body));
  for (const body of [
    { content: PERSONAL.outbound, attachments: [file.data.id] },
    { content: PERSONAL.note, type: 'note' },
  ]) {
    const res = await call(app, 'POST', `/conversations/${c.id}/messages`, { token: admin.token, body });
    assert.equal(res.status, 201, JSON.stringify(res.body));
  }
  const messages = await call(app, 'GET', `/conversations/${c.id}/messages`, { token: admin.token });
  const attachment = messages.data[0].attachments[0];
  const task = await call(app, 'POST', '/tasks', {
    token: admin.token,
    body: { title: 'Extra pillows', department: 'housekeeping', guestId },
  });
  assert.equal(task.status, 201, JSON.stringify(task.body));
  // The web chat knows the guest by their e-mail, and from now on by the visitor id too.
  const widget = await key(app, admin, ['channels:inbound']);
  const web = await call(app, 'POST', '/channels/web/inbound', {
    token: widget,
    body: { guest: { visitorId: 'visitor-ana', email: PERSONAL.email, name: PERSONAL.name }, content: PERSONAL.web },
  });
  assert.equal(web.status, 201, JSON.stringify(web.body));
  assert.equal(web.data.guestId, guestId);
  return {
    app,
    admin,
    manager,
    staff,
    guestId,
    conversationId: c.id,
    attachmentUrl: attachment.url,
    attachmentId: attachment.id,
    widget,
    files: files.dir,
  };
}

/** The contents the file store holds (files under the digest folders, not the staging one). */
const storedContents = (dir: string) =>
  readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && !e.parentPath.includes('.staging'))
    .map((e) => e.name);

test('the export holds the guest, stays, conversations with messages and files, tasks and events', async (t) => {
  const w = await world(t);
  const { app, guestId } = w;
  const res = await call(app, 'GET', `/guests/${guestId}/export`, { token: w.manager.token });
  assert.equal(res.status, 200, res.raw.body);
  assert.match(String(res.headers['content-type']), /^application\/json/);
  const data = res.data;
  assert.deepEqual(Object.keys(data), ['guest', 'stays', 'conversations', 'tasks', 'events']);
  assert.equal(data.guest.name, PERSONAL.name);
  assert.equal(data.guest.externalRef, PERSONAL.externalRef);
  assert.deepEqual(
    data.stays.map((s: { notes: string }) => s.notes),
    [PERSONAL.stayNotes],
  );
  const byChannel = Object.fromEntries(data.conversations.map((c: { channel: string }) => [c.channel, c]));
  assert.equal(byChannel.email.id, w.conversationId);
  assert.equal(byChannel.email.subject, PERSONAL.subject);
  assert.deepEqual(
    byChannel.email.messages.map((m: { content: string }) => m.content),
    [PERSONAL.outbound, PERSONAL.note],
  );
  assert.equal(byChannel.email.messages[0].attachments[0].filename, PERSONAL.filename);
  assert.deepEqual(
    byChannel.web.messages.map((m: { content: string }) => m.content),
    [PERSONAL.web],
  );
  assert.deepEqual(
    data.tasks.map((x: { title: string }) => x.title),
    ['Extra pillows'],
  );
  const types = new Set(data.events.map((e: { type: string }) => e.type));
  for (const type of ['guest.created', 'guest.updated', 'stay.created', 'conversation.created', 'message.created']) {
    assert.ok(types.has(type), `${type} in ${[...types].join(', ')}`);
  }
  const ids = data.events.map((e: { id: string }) => Number(e.id));
  assert.deepEqual(
    ids,
    [...ids].sort((a, b) => a - b),
  );
  // Another guest's records are not in it.
  const other = await call(app, 'POST', '/guests', { token: w.admin.token, body: { name: 'Rui Costa' } });
  const otherExport = await call(app, 'GET', `/guests/${other.data.id}/export`, { token: w.admin.token });
  assert.equal(otherExport.status, 200);
  assert.deepEqual(otherExport.data.conversations, []);
  assert.ok(!otherExport.raw.body.includes(PERSONAL.name));
  assert.deepEqual(
    otherExport.data.events.map((e: { type: string }) => e.type),
    ['guest.created'],
  );

  assertError(await call(app, 'GET', `/guests/${guestId}/export`, { token: w.staff.token }), 403, 'FORBIDDEN');
  assertError(
    await call(app, 'GET', '/guests/gst_00000000000000000000000000/export', { token: w.admin.token }),
    404,
    'NOT_FOUND',
  );
  const reader = await key(app, w.admin, ['guests:read']);
  assert.equal((await call(app, 'GET', `/guests/${guestId}/export`, { token: reader })).status, 200);
  const conversationsOnly = await key(app, w.admin, ['conversations:read']);
  assertError(await call(app, 'GET', `/guests/${guestId}/export`, { token: conversationsOnly }), 403, 'FORBIDDEN');

  // Every export handed out is in the audit log: who took which guest's data (a refused one is
  // `access.denied`, a missing guest nothing).
  const keys = (await call(app, 'GET', '/api-keys', { token: w.admin.token })).data;
  const readerId = keys.find((k: { name: string }) => k.name === 'guests:read').id;
  const exported = (await call(app, 'GET', '/audit-log?action=guest.exported', { token: w.admin.token })).data;
  assert.deepEqual(exported.map((e: { actor: unknown; target: unknown }) => [e.actor, e.target]).reverse(), [
    [
      { type: 'staff', id: w.manager.id },
      { type: 'guest', id: guestId },
    ],
    [
      { type: 'staff', id: w.admin.id },
      { type: 'guest', id: other.data.id },
    ],
    [
      { type: 'api_key', id: readerId },
      { type: 'guest', id: guestId },
    ],
  ]);
});

/** Every row of every table of the store, as JSON text, lower-cased. */
async function wholeStore(app: FastifyInstance): Promise<string> {
  const store = app.ctx.store;
  const q = async (text: string) =>
    (await store.executeQuery(CompiledQuery.raw(text))).rows as Record<string, unknown>[];
  const tables =
    TEST_STORE === 'postgres'
      ? (await q("select table_name as name from information_schema.tables where table_schema = 'public'")).map((r) =>
          String(r.name),
        )
      : (await q("select name from sqlite_master where type = 'table'"))
          .map((r) => String(r.name))
          // A full-text index's own shadow tables hold its words in binary pages, not rows to read.
          .filter((name) => !/^(message_fts|guest_search)_/.test(name));
  const parts: string[] = [];
  // Counters (per tag, status, staff member) say how many, never who: a tag nobody holds counts 0.
  for (const name of tables.filter((n) => !n.endsWith('_counts'))) {
    const rows =
      TEST_STORE === 'postgres'
        ? await q(`select row_to_json(t)::text as j from "${name}" t`)
        : await q(`select * from "${name}"`);
    parts.push(`${name}:${JSON.stringify(rows)}`);
  }
  return parts.join('\n').toLowerCase();
}

const leftovers = (text: string) => Object.values(PERSONAL).filter((p) => text.toLowerCase().includes(p.toLowerCase()));

test('an erase leaves nothing personal anywhere, is audited, answers the same again, and the address is a new guest', async (t) => {
  // A webhook endpoint that refuses until the erase, so its deliveries are still queued then.
  const received: string[] = [];
  let erased = false;
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => {
      body += c;
    });
    req.on('end', () => {
      if (erased) received.push(body);
      res.writeHead(erased ? 204 : 503).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => server.close());
  const port = (server.address() as AddressInfo).port;
  const env = { WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_RETRY_BASE_MS: '60000' };
  const w = await world(t, env);
  const { app, admin, guestId } = w;
  const hook = await call(app, 'POST', '/webhooks', {
    token: admin.token,
    body: { url: `http://127.0.0.1:${port}/hook`, events: ['*'] },
  });
  assert.equal(hook.status, 201, JSON.stringify(hook.body));
  // An inbound message after the endpoint exists: its events are queued for it.
  const inbound = await call(app, 'POST', '/channels/web/inbound', {
    token: w.widget,
    body: { guest: { visitorId: 'visitor-ana' }, content: PERSONAL.inbound },
  });
  assert.equal(inbound.status, 201, JSON.stringify(inbound.body));
  // A second file, also carried into another guest's conversation: its content must stay for them.
  const shared = await upload(app, admin.token, png(), 'lobby.png');
  const sent = await call(app, 'POST', `/conversations/${w.conversationId}/messages`, {
    token: admin.token,
    body: { content: PERSONAL.outbound, attachments: [shared.data.id] },
  });
  assert.equal(sent.status, 201, JSON.stringify(sent.body));
  const other = await call(app, 'POST', '/guests', { token: admin.token, body: { name: 'Rui Costa' } });
  const otherConversation = await openConversation(app, admin.token, { guestId: other.data.id, channel: 'web' });
  const carried = await call(app, 'POST', `/conversations/${otherConversation.id}/messages`, {
    token: admin.token,
    body: { content: 'The lobby', attachments: [sent.data.attachments[0].id] },
  });
  assert.equal(carried.status, 201, JSON.stringify(carried.body));
  assert.equal(storedContents(w.files).length, 2);
  const searchFor = (q: string) =>
    call(app, 'GET', `/messages/search?q=${encodeURIComponent(q)}`, { token: admin.token });
  assert.equal((await searchFor('AB1234567')).data.length, 1);
  // Everything personal is in the store before the erase: the checks below can fail.
  assert.equal(leftovers(await wholeStore(app)).length, Object.keys(PERSONAL).length);

  assertError(await call(app, 'POST', `/guests/${guestId}/erase`, { token: w.manager.token }), 403, 'FORBIDDEN');
  assertError(await call(app, 'POST', `/guests/${guestId}/erase`, { token: w.staff.token }), 403, 'FORBIDDEN');
  const writer = await key(app, admin, ['guests:write']);
  const byKey = await call(app, 'POST', `/guests/${guestId}/erase`, { token: writer });
  assertError(byKey, 403, 'FORBIDDEN');
  assert.match(byKey.body.error.message, /staff token/);
  assertError(
    await call(app, 'POST', '/guests/gst_00000000000000000000000000/erase', { token: admin.token }),
    404,
    'NOT_FOUND',
  );

  const res = await call(app, 'POST', `/guests/${guestId}/erase`, { token: admin.token });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  erased = true;
  const guest = res.data;
  assert.equal(guest.id, guestId);
  assert.equal(guest.name, 'Erased guest');
  for (const field of ['email', 'phone', 'notes', 'externalRef']) assert.equal(guest[field], null, field);
  assert.deepEqual(guest.tags, []);
  assert.deepEqual(guest.attributes, {});

  // Read back as a data-protection officer would.
  const shown: string[] = [];
  const read = async (url: string, status = 200) => {
    const r = await call(app, 'GET', url, { token: admin.token });
    assert.equal(r.status, status, `${url}: ${r.raw.body}`);
    shown.push(r.raw.body);
    return r;
  };
  assert.deepEqual((await read(`/guests/${guestId}`)).data, guest);
  const conversations = (await read(`/conversations?limit=100`)).data.filter(
    (c: { guestId: string }) => c.guestId === guestId,
  );
  assert.equal(conversations.length, 2);
  for (const c of conversations) {
    assert.equal(c.guest.name, 'Erased guest');
    assert.equal(c.subject, null);
    const messages = (await read(`/conversations/${c.id}/messages?limit=100`)).data;
    assert.ok(messages.length > 0);
    for (const m of messages) {
      assert.equal(m.content, '[erased]');
      assert.deepEqual(m.attachments, []);
    }
  }
  assert.equal((await fetchLink(app, w.attachmentUrl)).statusCode, 404);
  // The guest's own file's content is gone; the one another guest's message carries stays theirs.
  assert.deepEqual(storedContents(w.files), [shared.data.sha256]);
  const otherMessages = await read(`/conversations/${otherConversation.id}/messages`);
  assert.equal((await fetchLink(app, otherMessages.data[0].attachments[0].url)).statusCode, 200);
  await read(`/attachments/${w.attachmentId}`, 404);
  for (const q of ['AB1234567', 'passport', 'pereira', 'gentle']) assert.deepEqual((await searchFor(q)).data, [], q);
  assert.deepEqual((await read(`/guests?search=${encodeURIComponent('pereira')}`)).data, []);
  assert.deepEqual((await read(`/guests?email=${encodeURIComponent(PERSONAL.email)}`)).data, []);
  const tasks = (await read('/tasks')).data;
  assert.deepEqual(
    tasks.map((x: { title: string }) => x.title),
    ['Extra pillows'],
  );
  const feed = (await read('/events?after=0&limit=100')).data;
  assert.equal(feed.filter((e: { type: string }) => e.type === 'guest.erased').length, 1);
  await read(`/guests/${guestId}/export`);
  const audit = (await read('/audit-log?action=guest.erased')).data;
  assert.equal(audit.length, 1);
  assert.deepEqual(audit[0].target, { type: 'guest', id: guestId });
  assert.deepEqual(audit[0].actor, { type: 'staff', id: admin.id });
  // The answer kept for the guest's creation is replayed redacted.
  const replay = await call(app, 'POST', '/guests', {
    token: admin.token,
    headers: { 'idempotency-key': 'guest-ana-1' },
    body: {
      name: PERSONAL.name,
      email: PERSONAL.email,
      phone: PERSONAL.phone,
      notes: PERSONAL.notes,
      tags: [PERSONAL.tag],
      attributes: { loyalty: PERSONAL.attribute },
    },
  });
  assert.equal(replay.headers['idempotent-replayed'], 'true');
  assert.equal(replay.data.name, 'Erased guest');
  shown.push(replay.raw.body);
  // The deliveries still queued go out redacted.
  const deliveries = (await read(`/webhooks/${hook.data.id}/deliveries?limit=100`)).data;
  const pending = deliveries.filter((d: { status: string }) => d.status === 'pending');
  assert.ok(pending.some((d: { eventType: string }) => d.eventType === 'message.created'));
  for (const d of pending) {
    const r = await call(app, 'POST', `/webhooks/${hook.data.id}/deliveries/${d.id}/redeliver`, { token: admin.token });
    assert.equal(r.status, 202, JSON.stringify(r.body));
  }
  for (let i = 0; i < 400 && received.length < pending.length; i++) await new Promise((r) => setTimeout(r, 50));
  assert.ok(received.length >= pending.length, `${received.length} of ${pending.length} delivered`);
  assert.ok(received.some((b) => b.includes('[erased]')));
  shown.push(...received);

  assert.deepEqual(leftovers(shown.join('\n')), []);
  assert.deepEqual(leftovers(await wholeStore(app)), []);

  // Again: the same answer, nothing more written.
  const again = await call(app, 'POST', `/guests/${guestId}/erase`, { token: admin.token });
  assert.equal(again.status, 200);
  assert.deepEqual(again.data, guest);
  assert.equal((await read('/audit-log?action=guest.erased')).data.length, 1);

  // The address writing again is someone new.
  const back = await call(app, 'POST', '/channels/web/inbound', {
    token: w.widget,
    body: {
      guest: { visitorId: 'visitor-ana', email: PERSONAL.email, phone: PERSONAL.phone, name: PERSONAL.name },
      content: 'Hello again',
    },
  });
  assert.equal(back.status, 201, JSON.stringify(back.body));
  assert.equal(back.data.guestCreated, true);
  assert.notEqual(back.data.guestId, guestId);
  assert.equal(back.data.conversationCreated, true);
});

test('export and erase page through a long history: every message and event once, in order', async (t) => {
  const app = await buildTestApp(t);
  const admin = await createStaff(app, 'admin');
  const created = await call(app, 'POST', '/guests', { token: admin.token, body: { name: 'Long Stay' } });
  const guestId = created.data.id as string;
  const c = await openConversation(app, admin.token, { guestId, channel: 'web' });
  // More than two pages of each, written straight to the store (sending 1,100 through the API is
  // not the point); several messages share a time, so the page key's tie-break on the id is used.
  const base = Date.parse('2026-11-01T00:00:00.000Z');
  const messages = Array.from({ length: 1100 }, (_, i) => ({
    id: newId('msg'),
    conversation_id: c.id as string,
    direction: 'inbound' as const,
    type: 'text' as const,
    content: `message ${i}`,
    sender_type: 'guest' as const,
    sender_id: guestId,
    delivery_status: 'received' as const,
    created_at: new Date(base + Math.floor(i / 3)).toISOString(),
  }));
  const events = Array.from({ length: 1100 }, (_, i) => ({
    type: 'guest.updated',
    occurred_at: new Date(base + i).toISOString(),
    actor_type: 'staff' as const,
    actor_id: admin.id,
    conversation_id: null,
    task_id: null,
    assignee: null,
    data: JSON.stringify({ ...created.data, notes: `n ${i}` }),
    changes: null,
  }));
  const db = app.ctx.store.db;
  for (let i = 0; i < 1100; i += 100) {
    await db
      .insertInto('messages')
      .values(messages.slice(i, i + 100))
      .execute();
    await db
      .insertInto('events')
      .values(events.slice(i, i + 100))
      .execute();
  }
  const res = await call(app, 'GET', `/guests/${guestId}/export`, { token: admin.token });
  assert.equal(res.status, 200, res.raw.body.slice(0, 500));
  const expected = [...messages].sort((a, b) =>
    a.created_at === b.created_at ? (a.id < b.id ? -1 : 1) : a.created_at < b.created_at ? -1 : 1,
  );
  assert.deepEqual(
    res.data.conversations[0].messages.map((m: { id: string }) => m.id),
    expected.map((m) => m.id),
  );
  const exported = res.data.events.filter((e: { type: string }) => e.type === 'guest.updated');
  assert.deepEqual(
    exported.map((e: { data: { notes: string } }) => e.data.notes),
    events.map((_, i) => `n ${i}`),
  );
  // The erase reaches every page too.
  assert.equal((await call(app, 'POST', `/guests/${guestId}/erase`, { token: admin.token })).status, 200);
  const after = await call(app, 'GET', `/guests/${guestId}/export`, { token: admin.token });
  const contents = new Set(after.data.conversations[0].messages.map((m: { content: string }) => m.content));
  assert.deepEqual([...contents], ['[erased]']);
  assert.equal(after.data.conversations[0].messages.length, 1100);
  const notes = after.data.events.filter((e: { data: { notes?: string | null } }) => e.data.notes != null);
  assert.deepEqual(notes, []);
});
