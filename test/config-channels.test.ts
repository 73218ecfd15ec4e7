// The channel dispatcher's settings (src/config-channels.ts): defaults as documented, and a bad
// value refused naming its variable.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError } from '../src/config.js';
import { parseChannels as parse } from '../src/config-channels.js';
import { JWT_SECRET } from './helpers.js';

const parseChannels = (env: Record<string, string>) => parse(env, JWT_SECRET);

test("the dispatcher's timings default as documented; the lease follows the send timeout", () => {
  const c = parseChannels({});
  assert.equal(c.sendTimeoutMs, 15_000);
  assert.equal(c.leaseMs, 35_000);
  assert.equal(c.smtpAnswerTimeoutMs, 600_000);
  assert.equal(c.concurrency, 16);
  assert.equal(parseChannels({ CHANNEL_SEND_TIMEOUT_MS: '2000' }).leaseMs, 9000);
  assert.equal(parseChannels({ CHANNEL_SEND_TIMEOUT_MS: '2000', CHANNEL_LEASE_MS: '4000' }).leaseMs, 4000);
});

test('a lease shorter than two send timeouts, or a bad slot count or answer timeout, is refused by name', () => {
  for (const [env, variable, message] of [
    [{ CHANNEL_LEASE_MS: '20000' }, 'CHANNEL_LEASE_MS', /at least twice CHANNEL_SEND_TIMEOUT_MS \(30000\)/],
    [{ CHANNEL_LEASE_MS: 'soon' }, 'CHANNEL_LEASE_MS', /whole number/],
    [{ CHANNEL_CONCURRENCY: '0' }, 'CHANNEL_CONCURRENCY', /from 1 to 256/],
    [{ CHANNEL_SMTP_ANSWER_TIMEOUT_MS: '-1' }, 'CHANNEL_SMTP_ANSWER_TIMEOUT_MS', /whole number/],
  ] as const) {
    assert.throws(
      () => parseChannels(env),
      (err: unknown) => err instanceof ConfigError && err.variable === variable && message.test(err.message),
      JSON.stringify(env),
    );
  }
});
