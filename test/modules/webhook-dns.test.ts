// A webhook URL is resolved and checked before the write's transaction opens (docs/decisions.md):
// with an Idempotency-Key or If-Match the whole handler runs in one transaction, and on SQLite that
// transaction holds the only writer, so a DNS answer taking seconds would stall every other write.
// The resolver is the app's own (BuildOptions.resolveHost), held by the test until it lets go.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { buildTestApp, call, createStaff, type Res } from '../helpers.js';

const PUBLIC = '93.184.216.34';
/** No event of the test is one of these: nothing is delivered to the made-up hosts. */
const QUIET = ['knowledge.deleted'];
/** Generous: a write that is not held up answers in milliseconds; one that is never answers. */
const LIVENESS_MS = 5000;

test('a slow DNS answer for a webhook URL holds up no other write (Idempotency-Key, If-Match)', async (t) => {
  let asked: () => void = () => {};
  let answer: () => void = () => {};
  const app = await buildTestApp(
    t,
    {},
    {
      resolveHost: async (host) => {
        if (host === 'slow.example.com') {
          asked();
          await new Promise<void>((r) => {
            answer = r;
          });
        }
        return [host === 'internal.example.com' ? '10.1.2.3' : PUBLIC];
      },
    },
  );
  const admin = await createStaff(app, 'admin');
  const token = admin.token;
  const hook = await call(app, 'POST', '/webhooks', {
    token,
    body: { url: 'https://fast.example.com/hook', events: QUIET },
  });
  assert.equal(hook.status, 201, hook.raw.body);
  const etag = String((await call(app, 'GET', `/webhooks/${hook.data.id}`, { token })).headers.etag);

  const cases: [string, () => Promise<Res>][] = [
    [
      'POST with Idempotency-Key',
      () =>
        call(app, 'POST', '/webhooks', {
          token,
          body: { url: 'https://slow.example.com/a', events: QUIET },
          headers: { 'idempotency-key': 'slow-create' },
        }),
    ],
    [
      'PATCH with If-Match',
      () =>
        call(app, 'PATCH', `/webhooks/${hook.data.id}`, {
          token,
          body: { url: 'https://slow.example.com/b' },
          headers: { 'if-match': etag },
        }),
    ],
  ];
  for (const [what, send] of cases) {
    const resolving = new Promise<void>((r) => {
      asked = r;
    });
    const slow = send();
    await resolving;
    const other = call(app, 'POST', '/guests', { token, body: { name: `Written during ${what}` } });
    const first = await Promise.race([other.then(() => 'write'), sleep(LIVENESS_MS).then(() => 'dns')]);
    answer();
    assert.equal(first, 'write', `${what}: the write waited for the DNS answer`);
    assert.equal((await other).status, 201);
    const res = await slow;
    assert.ok(res.status === 201 || res.status === 200, `${what}: ${res.raw.body}`);
  }
  // The check still holds: a host resolving to a private address is refused, with a key or not.
  for (const headers of [{}, { 'idempotency-key': 'private' }] as Record<string, string>[]) {
    const refused = await call(app, 'POST', '/webhooks', {
      token,
      body: { url: 'https://internal.example.com/c', events: QUIET },
      headers,
    });
    assert.equal(refused.status, 400, refused.raw.body);
    assert.match(refused.body.error.details[0].message, /10\.1\.2\.3/);
  }
});
