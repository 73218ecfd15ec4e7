import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { test } from 'node:test';
import { newId } from '../../src/lib/ids.js';
import { sweepUnused } from '../../src/modules/attachments/sweep.js';
import { assertError, insertGuest, openConversation } from '../fixtures.js';
import { buildTestApp, call, createStaff } from '../helpers.js';
import { fetchLink, pdf, png, tempStore, upload } from './files.js';

async function setup(t: test.TestContext) {
  const store = tempStore(t);
  const app = await buildTestApp(t, store.env);
  const admin = await createStaff(app, 'admin');
  const alice = await createStaff(app, 'staff');
  const bob = await createStaff(app, 'staff');
  const guestId = await insertGuest(app);
  const open = (assignee: string) => openConversation(app, admin.token, { guestId, channel: 'web', assignee });
  return { app, admin, alice, bob, open, dir: store.dir };
}

test('a message carries uploaded files in order, each with a signed link', async (t) => {
  const { app, alice, open } = await setup(t);
  const c = await open(alice.id);
  const a = (await upload(app, alice.token, png(), 'room.png')).data;
  const b = (await upload(app, alice.token, pdf(), 'folio.pdf')).data;
  const sent = await call(app, 'POST', `/conversations/${c.id}/messages`, {
    token: alice.token,
    body: { attachments: [b.id, a.id] },
  });
  assert.equal(sent.status, 201, sent.raw.body);
  assert.equal(sent.data.content, '');
  assert.deepEqual(
    sent.data.attachments.map((x: { id: string; status: string; contentType: string }) => [
      x.id,
      x.status,
      x.contentType,
    ]),
    [
      [b.id, 'stored', 'application/pdf'],
      [a.id, 'stored', 'image/png'],
    ],
  );
  const listed = await call(app, 'GET', `/conversations/${c.id}/messages`, { token: alice.token });
  assert.deepEqual(
    listed.data.at(-1).attachments.map((x: { id: string }) => x.id),
    [b.id, a.id],
  );
  const one = await call(app, 'GET', `/conversations/${c.id}/messages/${sent.data.id}`, { token: alice.token });
  assert.equal((await fetchLink(app, one.data.attachments[1].url)).statusCode, 200);
  const record = await call(app, 'GET', `/attachments/${a.id}`, { token: alice.token });
  assert.equal(record.data.messageId, sent.data.id);
  assert.equal(record.data.conversationId, c.id);

  // The message.created event carries them too.
  const events = await app.ctx.store.db.selectFrom('events').select(['type', 'data']).execute();
  const created = events.filter((e) => e.type === 'message.created').map((e) => JSON.parse(String(e.data)));
  assert.equal(created.at(-1).attachments.length, 2);
});

test('attachments the caller may not use are refused, and the message is not stored', async (t) => {
  const { app, admin, alice, bob, open } = await setup(t);
  const mine = await open(alice.id);
  const bobs = await open(bob.id);
  const bobUpload = (await upload(app, bob.token, png())).data;
  const send = (token: string, cid: string, body: object) =>
    call(app, 'POST', `/conversations/${cid}/messages`, { token, body });

  assertError(await send(alice.token, mine.id, { content: 'x', attachments: [newId('att')] }), 400, 'VALIDATION_ERROR');
  const unknown = await send(alice.token, mine.id, { content: 'x', attachments: [newId('att')] });
  assert.equal(unknown.body.error.details[0].field, 'attachments/0');
  // Someone else's unused upload reads as an unknown id: its existence is not revealed.
  const theirs = await send(alice.token, mine.id, { attachments: [bobUpload.id] });
  assertError(theirs, 400, 'VALIDATION_ERROR', "another's upload");
  assert.deepEqual(theirs.body.error.details, unknown.body.error.details);
  assertError(await send(alice.token, mine.id, { content: 'x', attachments: [] }), 400, 'VALIDATION_ERROR', 'empty');
  const eleven = Array.from({ length: 11 }, () => newId('att'));
  assertError(await send(alice.token, mine.id, { attachments: eleven }), 400, 'VALIDATION_ERROR', 'eleven');

  // A file of Bob's conversation: Alice may not carry it on, an admin may (as a new record).
  const onBobs = await send(bob.token, bobs.id, { content: 'the map', attachments: [bobUpload.id] });
  assert.equal(onBobs.status, 201, onBobs.raw.body);
  assertError(await send(alice.token, mine.id, { attachments: [bobUpload.id] }), 403, 'FORBIDDEN', "Bob's file");
  assertError(await call(app, 'GET', `/attachments/${bobUpload.id}`, { token: alice.token }), 403, 'FORBIDDEN');
  const forwarded = await send(admin.token, mine.id, { attachments: [bobUpload.id] });
  assert.equal(forwarded.status, 201, forwarded.raw.body);
  assert.notEqual(forwarded.data.attachments[0].id, bobUpload.id);
  assert.equal(
    (await call(app, 'GET', `/attachments/${forwarded.data.attachments[0].id}`, { token: alice.token })).status,
    200,
  );

  const listed = await call(app, 'GET', `/conversations/${mine.id}/messages`, { token: alice.token });
  assert.equal(listed.data.length, 1, 'only the admin’s message was stored');
});

test('an upload no message took is removed after 24 hours; a content still named is kept', async (t) => {
  const { app, alice, open, dir } = await setup(t);
  const c = await open(alice.id);
  const bytes = png();
  const used = (await upload(app, alice.token, bytes)).data;
  const twin = (await upload(app, alice.token, bytes)).data;
  const lone = (await upload(app, alice.token, pdf())).data;
  await call(app, 'POST', `/conversations/${c.id}/messages`, { token: alice.token, body: { attachments: [used.id] } });
  const contents = () => readdirSync(dir, { recursive: true }).filter((f) => /[0-9a-f]{64}$/.test(String(f))).length;
  assert.equal(contents(), 2);

  assert.equal(await sweepUnused(app.ctx.store, app.attachments.blobs, Date.now()), 0, 'nothing is a day old yet');
  assert.equal(await sweepUnused(app.ctx.store, app.attachments.blobs, Date.now() + 25 * 3_600_000), 2);
  assert.equal((await call(app, 'GET', `/attachments/${twin.id}`, { token: alice.token })).status, 404);
  assert.equal((await call(app, 'GET', `/attachments/${lone.id}`, { token: alice.token })).status, 404);
  assert.equal((await call(app, 'GET', `/attachments/${used.id}`, { token: alice.token })).status, 200);
  assert.equal(contents(), 1, 'the PDF is gone, the PNG the message carries is kept');
});

test('an unused upload is taken by its uploader only: not an admin, another key, or another widget', async (t) => {
  const { app, admin, alice, open } = await setup(t);
  const c = await open(alice.id);
  const key = async (name: string, scopes: string[]) =>
    (await call(app, 'POST', '/api-keys', { token: admin.token, body: { name, scopes } })).data.key as string;
  const writer = await key('crm', ['conversations:write', 'conversations:read']);
  const other = await key('other', ['conversations:write', 'conversations:read']);
  const widget = await key('widget', ['channels:inbound']);
  const send = (token: string, id: string) =>
    call(app, 'POST', `/conversations/${c.id}/messages`, { token, body: { content: 'x', attachments: [id] } });
  const refused = (res: Awaited<ReturnType<typeof send>>, what: string) => {
    assertError(res, 400, 'VALIDATION_ERROR', what);
    assert.equal(res.body.error.details[0].field, 'attachments/0', what);
  };

  const alices = (await upload(app, alice.token, png())).data;
  refused(await send(admin.token, alices.id), "an admin taking alice's upload");
  refused(await send(writer, alices.id), "a key taking alice's upload");
  const keys = (await upload(app, writer, pdf())).data;
  refused(await send(other, keys.id), "another key taking a key's upload");
  refused(await send(alice.token, keys.id), "staff taking a key's upload");
  assert.equal((await send(writer, keys.id)).status, 201, 'the key sends its own upload');
  assert.equal((await send(alice.token, alices.id)).status, 201, 'alice sends her own upload');

  // The web widget's backend hands over what it uploaded; another caller cannot hand it over.
  const inbound = (token: string, id: string) =>
    call(app, 'POST', '/channels/web/inbound', {
      token,
      body: { guest: { visitorId: 'visitor-7' }, content: 'my passport', attachments: [id] },
    });
  const widgets = (await upload(app, widget, png())).data;
  refused(await inbound(admin.token, widgets.id), "an admin handing over the widget's upload");
  const own = await inbound(widget, widgets.id);
  assert.equal(own.status, 201, own.raw.body);
  const files = await call(app, 'GET', `/attachments/${widgets.id}`, { token: admin.token });
  assert.equal(files.data.messageId, own.data.message.id);
});

test('an unused upload reads as an unknown id to anyone but its uploader, admins and keys included', async (t) => {
  const { app, admin, alice, bob, open } = await setup(t);
  const keyWith = async (name: string) =>
    (await call(app, 'POST', '/api-keys', { token: admin.token, body: { name, scopes: ['conversations:read'] } })).data
      .key as string;
  const reader = await keyWith('reader');
  const alices = (await upload(app, alice.token, png())).data;
  const unknownId = newId('att');
  // The envelope for an id that names nothing, with the id taken out of its message.
  const answer = async (token: string, id: string) => {
    const res = await call(app, 'GET', `/attachments/${id}`, { token });
    return {
      status: res.status,
      error: { ...res.body.error, message: String(res.body.error?.message).replace(id, '<id>') },
    };
  };
  for (const [who, token] of [
    ['another staff member', bob.token],
    ['an admin', admin.token],
    ['an API key', reader],
  ] as const) {
    const got = await answer(token, alices.id);
    const unknown = await answer(token, unknownId);
    assert.equal(unknown.status, 404, who);
    assert.deepEqual(got, unknown, `${who} reading alice's unused upload`);
  }
  assert.equal((await call(app, 'GET', `/attachments/${alices.id}`, { token: alice.token })).status, 200);

  // Once a message carries it, whoever may see the conversation reads it; staff who may not get 403.
  const c = await open(alice.id);
  const sent = await call(app, 'POST', `/conversations/${c.id}/messages`, {
    token: alice.token,
    body: { attachments: [alices.id] },
  });
  assert.equal(sent.status, 201, sent.raw.body);
  assert.equal((await call(app, 'GET', `/attachments/${alices.id}`, { token: admin.token })).status, 200);
  assert.equal((await call(app, 'GET', `/attachments/${alices.id}`, { token: reader })).status, 200);
  assertError(await call(app, 'GET', `/attachments/${alices.id}`, { token: bob.token }), 403, 'FORBIDDEN');
});
