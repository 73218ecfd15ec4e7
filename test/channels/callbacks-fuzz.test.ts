// Provider callbacks fuzzed with valid signatures (the generic fuzz in test/fuzz cannot sign):
// whatever a provider or someone holding its secret sends, the answer is a success or a clear 4xx
// in the envelope, never a 5xx, and the store stays readable.
import assert from 'node:assert/strict';
import test from 'node:test';
import fc from 'fast-check';
import { buildTestApp, call, createStaff, type Res } from '../helpers.js';
import { INBOUND_ENV, metaPayload, metaSign, postEmail, postTwilio } from './signing.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 150);
const SEED = Number(process.env.FUZZ_SEED ?? 20261125);

function clean(res: Res, what: string) {
  assert.ok(res.status < 500, `${what} → ${res.status} ${res.raw.body.slice(0, 300)}`);
  if (res.status >= 400) {
    assert.equal(res.body?.success, false, `${what}: not the envelope`);
    assert.match(String(res.body.error.code), /^[A-Z_]+$/);
  }
}

const phone = fc.oneof(fc.stringMatching(/^[1-9]\d{6,14}$/), fc.string({ maxLength: 20 }), fc.constant('447700900999'));
const maybe = <T>(a: fc.Arbitrary<T>) => fc.option(a, { nil: undefined });
const metaMessage = fc.record(
  {
    from: maybe(phone),
    id: maybe(fc.oneof(fc.string({ maxLength: 80 }), fc.constant('wamid.fixed'))),
    timestamp: maybe(fc.oneof(fc.string({ maxLength: 12 }), fc.integer().map(String))),
    type: maybe(fc.constantFrom('text', 'image', 'location', 'interactive', 'button', 'reaction', 'zzz')),
    text: maybe(fc.oneof(fc.record({ body: fc.string({ maxLength: 5000 }) }), fc.jsonValue({ maxDepth: 3 }))),
    image: maybe(fc.jsonValue({ maxDepth: 3 })),
    location: maybe(fc.jsonValue({ maxDepth: 3 })),
    interactive: maybe(fc.jsonValue({ maxDepth: 3 })),
  },
  { requiredKeys: [] },
);
const metaStatus = fc.record(
  {
    id: maybe(fc.string({ maxLength: 80 })),
    status: maybe(fc.constantFrom('sent', 'delivered', 'read', 'failed', 'deleted', '')),
    timestamp: maybe(fc.oneof(fc.string({ maxLength: 12 }), fc.double().map(String))),
    errors: maybe(fc.jsonValue({ maxDepth: 3 })),
  },
  { requiredKeys: [] },
);

test('signed WhatsApp, Twilio and e-mail callbacks of any shape never answer 5xx', { timeout: 600_000 }, async (t) => {
  const app = await buildTestApp(t, { ...INBOUND_ENV, CHANNELS_DRY_RUN: 'true', RATE_LIMIT_CHANNELS: '10000000' });
  const admin = await createStaff(app, 'admin');

  const meta = fc.oneof(
    fc
      .record({
        messages: fc.array(fc.oneof(metaMessage, fc.jsonValue({ maxDepth: 2 })), { maxLength: 4 }),
        statuses: fc.array(fc.oneof(metaStatus, fc.jsonValue({ maxDepth: 2 })), { maxLength: 4 }),
        contacts: fc.array(fc.jsonValue({ maxDepth: 3 }), { maxLength: 2 }),
      })
      .map((v) => JSON.stringify(metaPayload(v))),
    fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v)),
    fc.string({ maxLength: 200 }),
  );
  const twilio = fc.record(
    {
      MessageSid: fc.string({ maxLength: 70 }),
      From: fc.oneof(
        phone.map((p) => `+${p}`),
        phone.map((p) => `whatsapp:+${p}`),
        fc.string({ maxLength: 70 }),
      ),
      Body: fc.string({ maxLength: 300 }),
      NumMedia: fc.string({ maxLength: 5 }),
      MessageStatus: fc.constantFrom('sent', 'delivered', 'read', 'failed', 'undelivered', 'queued', 'x'),
      ErrorCode: fc.string({ maxLength: 20 }),
    },
    { requiredKeys: [] },
  );
  const mail = fc
    .record({
      from: fc.oneof(fc.emailAddress(), fc.string({ maxLength: 60 })),
      subject: fc.string({ maxLength: 100 }),
      body: fc.string({ maxLength: 500 }),
      refs: fc.array(fc.string({ maxLength: 40 }), { maxLength: 3 }),
    })
    .map(
      (m) =>
        `From: ${m.from}\r\nSubject: ${m.subject}\r\nMessage-ID: <${m.body.length}@fuzz>\r\n` +
        `References: ${m.refs.join(' ')}\r\n\r\n${m.body}\r\n`,
    );

  await fc.assert(
    fc.asyncProperty(
      fc.oneof(
        meta.map((body) => ({ kind: 'meta' as const, body })),
        fc
          .tuple(fc.constantFrom('inbound', 'status') as fc.Arbitrary<'inbound' | 'status'>, twilio)
          .map(([path, form]) => ({ kind: 'twilio' as const, path, form })),
        mail.map((raw) => ({ kind: 'mail' as const, raw })),
      ),
      async (c) => {
        if (c.kind === 'meta') {
          const res = await call(app, 'POST', '/api/v1/channels/whatsapp/webhook', {
            body: c.body,
            headers: { 'content-type': 'application/json', 'x-hub-signature-256': metaSign(c.body) },
          });
          clean(res, `meta ${c.body.slice(0, 200)}`);
        } else if (c.kind === 'twilio') {
          const form = Object.fromEntries(Object.entries(c.form).filter(([, v]) => v !== undefined)) as Record<
            string,
            string
          >;
          clean(await postTwilio(app, c.path, form), `twilio ${c.path} ${JSON.stringify(form)}`);
        } else {
          clean(await postEmail(app, c.raw), `mail ${JSON.stringify(c.raw.slice(0, 200))}`);
        }
      },
    ),
    { numRuns: RUNS, seed: SEED, endOnFailure: true },
  );
  // The store still answers every list.
  for (const path of ['/guests', '/conversations']) {
    assert.equal((await call(app, 'GET', path, { token: admin.token })).status, 200);
  }
});
