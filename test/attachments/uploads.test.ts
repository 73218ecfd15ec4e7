import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { assertError } from '../fixtures.js';
import { buildTestApp, call, createStaff } from '../helpers.js';
import { fetchLink, jpeg, multipartBody, pdf, png, tempStore, upload, uploadParts, zip } from './files.js';

/** Every file under `dir`, staging included, as paths relative to it. */
function filesUnder(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      if (e.isDirectory()) walk(join(d, e.name));
      else out.push(join(d, e.name).slice(dir.length + 1));
    }
  };
  walk(dir);
  return out;
}

test('an upload is sniffed, stored once per digest, and served through a signed link only', async (t) => {
  const { dir, env } = tempStore(t);
  const app = await buildTestApp(t, { ...env, PUBLIC_URL: 'https://api.hotel.test' });
  const staff = await createStaff(app, 'staff');
  const bytes = png();
  const res = await upload(app, staff.token, bytes, 'C:\\fakepath\\..\\.passwd.png', 'image/png');
  assert.equal(res.status, 201, res.raw.body);
  const a = res.data;
  assert.match(a.id, /^att_/);
  assert.equal(res.headers.location, `/api/v1/attachments/${a.id}`);
  assert.equal(a.contentType, 'image/png');
  assert.equal(a.filename, 'passwd.png');
  assert.equal(a.size, bytes.length);
  assert.equal(a.sha256, createHash('sha256').update(bytes).digest('hex'));
  assert.match(
    a.url,
    new RegExp(`^https://api\\.hotel\\.test/api/v1/attachments/${a.id}/content\\?expires=\\d+&signature=`),
  );

  const got = await fetchLink(app, a.url);
  assert.equal(got.statusCode, 200);
  assert.deepEqual(got.rawPayload, bytes);
  assert.equal(got.headers['content-type'], 'image/png');
  assert.equal(got.headers['x-content-type-options'], 'nosniff');
  assert.equal(got.headers['content-security-policy'], 'sandbox');
  assert.match(String(got.headers['content-disposition']), /^inline; filename="passwd.png"/);

  // The link is the permission: another id, a changed expiry or signature, or a past one is 403.
  const u = new URL(a.url);
  const sig = u.searchParams.get('signature')!;
  for (const bad of [
    a.url.replace(sig, `${sig.slice(0, -2)}AA`),
    a.url.replace(/expires=\d+/, `expires=${Number(u.searchParams.get('expires')) + 300}`),
  ]) {
    const r = await fetchLink(app, bad);
    assert.equal(r.statusCode, 403, bad);
  }
  assert.equal((await fetchLink(app, a.url.split('?')[0]!)).statusCode, 403, 'no signature');
  const past = app.attachments.signer.url(a.id, Date.now() - 2 * 3_600_000);
  assert.equal((await fetchLink(app, past)).statusCode, 403);

  // The same bytes again: a second record, one content.
  const again = await upload(app, staff.token, bytes, 'copy.png');
  assert.equal(again.status, 201, again.raw.body);
  assert.notEqual(again.data.id, a.id);
  assert.equal(filesUnder(dir).filter((f) => !f.startsWith('.staging')).length, 1);

  // A plain-text file is a download, never shown inline; to another staff member the upload does not exist.
  const text = await uploadParts(app, staff.token, [
    { bytes: Buffer.from('Room 412, late check-out please'), filename: null },
  ]);
  assert.equal(text.status, 201, text.raw.body);
  assert.equal(text.data.contentType, 'text/plain');
  const t2 = await fetchLink(app, text.data.url);
  assert.equal(t2.headers['content-type'], 'text/plain; charset=utf-8');
  assert.match(String(t2.headers['content-disposition']), /^attachment;/);
  const other = await createStaff(app, 'staff');
  assertError(await call(app, 'GET', `/attachments/${a.id}`, { token: other.token }), 404, 'NOT_FOUND');
  assert.equal((await call(app, 'GET', `/attachments/${a.id}`, { token: staff.token })).status, 200);
});

test('a refused upload answers 415, 413 or 400 and leaves nothing behind', async (t) => {
  const { dir, env } = tempStore(t);
  const app = await buildTestApp(t, { ...env, ATTACHMENT_MAX_BYTES: '4096' });
  const admin = await createStaff(app, 'admin');
  const cases: [string, Promise<unknown>, number, string][] = [
    ['declared png, bytes pdf', upload(app, admin.token, pdf(), 'x.png', 'image/png'), 415, 'UNSUPPORTED_MEDIA_TYPE'],
    ['a zip', upload(app, admin.token, zip(), 'x.zip'), 415, 'UNSUPPORTED_MEDIA_TYPE'],
    [
      'html as text',
      upload(app, admin.token, Buffer.from('  <html><script>alert(1)</script>'), 'x.txt'),
      415,
      'UNSUPPORTED_MEDIA_TYPE',
    ],
    [
      'svg as text',
      upload(app, admin.token, Buffer.from('<?xml version="1.0"?><svg/>'), 'x.txt', 'text/plain'),
      415,
      'UNSUPPORTED_MEDIA_TYPE',
    ],
    [
      'declared pdf, bytes text',
      upload(app, admin.token, Buffer.from('just words'), 'x.pdf', 'application/pdf'),
      415,
      'UNSUPPORTED_MEDIA_TYPE',
    ],
    [
      'binary junk',
      upload(app, admin.token, Buffer.from([0, 1, 2, 0xff, 0xfe, 0]), 'x'),
      415,
      'UNSUPPORTED_MEDIA_TYPE',
    ],
    ['too large', upload(app, admin.token, png(5000), 'big.png'), 413, 'PAYLOAD_TOO_LARGE'],
    [
      'two files',
      uploadParts(app, admin.token, [
        { bytes: png(), filename: 'a.png' },
        { bytes: png(), filename: 'b.png' },
      ]),
      400,
      'VALIDATION_ERROR',
    ],
    [
      'another field',
      uploadParts(app, admin.token, [{ name: 'other', bytes: png(), filename: 'a.png' }]),
      400,
      'VALIDATION_ERROR',
    ],
    ['no parts', uploadParts(app, admin.token, []), 400, 'VALIDATION_ERROR'],
  ];
  for (const [what, pending, status, code] of cases) assertError((await pending) as never, status, code, what);
  const json = await call(app, 'POST', '/attachments', { token: admin.token, body: { file: 'x' } });
  assertError(json, 415, 'UNSUPPORTED_MEDIA_TYPE', 'json');
  assert.deepEqual(filesUnder(dir), []);
  const rows = await app.ctx.store.db.selectFrom('attachments').select('id').execute();
  assert.deepEqual(rows, []);

  // Aliases confirm: image/jpg for a JPEG, octet-stream says nothing.
  assert.equal((await upload(app, admin.token, jpeg(), 'a.jpg', 'image/jpg')).data.contentType, 'image/jpeg');
  assert.equal((await upload(app, admin.token, jpeg(), 'a', 'application/octet-stream')).status, 201);
});

test('an upload takes an Idempotency-Key over its file; keys with channels:inbound may upload', async (t) => {
  const { env } = tempStore(t);
  const app = await buildTestApp(t, env);
  const admin = await createStaff(app, 'admin');
  const bytes = png();
  const send = (file: Buffer, token = admin.token) => {
    const m = multipartBody([{ bytes: file, filename: 'a.png' }]);
    return call(app, 'POST', '/attachments', {
      token,
      body: m.body,
      headers: { 'content-type': m.type, 'idempotency-key': 'upload-1' },
    });
  };
  const first = await send(bytes);
  assert.equal(first.status, 201, first.raw.body);
  const again = await send(bytes);
  assert.equal(again.headers['idempotent-replayed'], 'true');
  assert.equal(again.data.id, first.data.id);
  assertError(await send(png()), 422, 'IDEMPOTENCY_KEY_REUSED');

  const key = await call(app, 'POST', '/api-keys', {
    token: admin.token,
    body: { name: 'widget', scopes: ['channels:inbound'] },
  });
  const byKey = await upload(app, key.data.key, pdf(), 'menu.pdf');
  assert.equal(byKey.status, 201, byKey.raw.body);
  assertError(await call(app, 'GET', `/attachments/${byKey.data.id}`, { token: key.data.key }), 403, 'FORBIDDEN');
});
