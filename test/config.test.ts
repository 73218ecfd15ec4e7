// Configuration (README, Configuration): defaults, and a bad variable stops start-up with one line naming it,
// exit code 1 and nothing half-started.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { ConfigError, defaultMaxConnections, loadConfig, openFilesLimit } from '../src/config.js';
import { keepGeneratedSecret } from '../src/config-secret.js';
import { JWT_SECRET, type Run, runNode } from './helpers.js';

test('defaults follow the contract', () => {
  const c = loadConfig({ JWT_SECRET });
  assert.equal(c.host, '127.0.0.1');
  assert.equal(c.port, 3000);
  assert.deepEqual(c.store, { kind: 'sqlite', path: './data/guest-api.db' });
  assert.equal(c.redisUrl, null);
  assert.equal(c.tokenTtlSeconds, 86400);
  assert.equal(c.rateLimitStandard, 100);
  assert.equal(c.rateLimitBulk, 10);
  assert.equal(c.rateLimitWindowSeconds, 60);
  assert.equal(c.loginLimit, 10);
  assert.equal(c.jwtSecretGenerated, false);
  assert.ok(Object.isFrozen(c));
  assert.throws(() => {
    (c as { port: number }).port = 1;
  });
});

test('connection limits: timeouts by default, the connection cap from the file limit', () => {
  const c = loadConfig({ JWT_SECRET });
  assert.equal(c.requestHeadersTimeoutMs, 10_000);
  assert.equal(c.requestTimeoutMs, 30_000);
  assert.equal(c.keepAliveTimeoutMs, 72_000);
  assert.equal(c.streamsPerCaller, 10);
  assert.equal(c.maxConnections, defaultMaxConnections(openFilesLimit()));
  assert.ok(c.maxConnections < openFilesLimit(), 'room is left for the store and the rest');
  assert.equal(loadConfig({ JWT_SECRET, MAX_CONNECTIONS: '500' }).maxConnections, 500);
  // The soft limit, read from /proc/self/limits; a sane fallback when it cannot be read.
  const limits =
    'Limit                     Soft Limit           Hard Limit           Units\n' +
    'Max open files            20000                524288               files\n';
  assert.equal(
    openFilesLimit(() => limits),
    20_000,
  );
  assert.equal(
    openFilesLimit(() => limits.replace('20000 ', 'unlimited')),
    1_048_576,
  );
  assert.equal(
    openFilesLimit(() => {
      throw new Error('ENOENT');
    }),
    1024,
  );
  assert.equal(defaultMaxConnections(20_000), 18_000);
  assert.equal(defaultMaxConnections(1024), 921);
  assert.equal(defaultMaxConnections(100), 36);
});

test('store, Redis and secrets are read from the environment', () => {
  assert.deepEqual(loadConfig({ DATABASE_URL: 'sqlite::memory:' }).store, { kind: 'sqlite', path: ':memory:' });
  assert.deepEqual(loadConfig({ DATABASE_URL: 'postgres://u:p@db:5432/gma' }).store, {
    kind: 'postgres',
    url: 'postgres://u:p@db:5432/gma',
  });
  assert.equal(loadConfig({ REDIS_URL: 'redis://cache:6379' }).redisUrl, 'redis://cache:6379');
  const dev = loadConfig({ NODE_ENV: 'development' });
  assert.equal(dev.jwtSecretGenerated, true);
  assert.ok(Buffer.byteLength(dev.jwtSecret) >= 32);
  assert.notEqual(loadConfig({}).jwtSecret, dev.jwtSecret, 'a generated secret is random');
  const rotated = loadConfig({ JWT_SECRET, JWT_SECRET_PREVIOUS: `${'a'.repeat(32)}, ${'b'.repeat(40)}` });
  assert.deepEqual(rotated.jwtPreviousSecrets, ['a'.repeat(32), 'b'.repeat(40)]);
});

const BAD: [Record<string, string>, string][] = [
  [{ DATABASE_URL: 'mysql://x' }, 'DATABASE_URL'],
  [{ DATABASE_URL: 'sqlite:' }, 'DATABASE_URL'],
  [{ PORT: 'abc' }, 'PORT'],
  [{ PORT: '70000' }, 'PORT'],
  [{ JWT_SECRET: 'short' }, 'JWT_SECRET'],
  [{ NODE_ENV: 'production', JWT_SECRET: '' }, 'JWT_SECRET'],
  [{ JWT_SECRET_PREVIOUS: 'too-short' }, 'JWT_SECRET_PREVIOUS'],
  [{ REDIS_URL: 'http://x' }, 'REDIS_URL'],
  [{ TOKEN_TTL_SECONDS: '-5' }, 'TOKEN_TTL_SECONDS'],
  [{ RATE_LIMIT_STANDARD: '0' }, 'RATE_LIMIT_STANDARD'],
  [{ LOG_LEVEL: 'loud' }, 'LOG_LEVEL'],
  [{ ADMIN_EMAIL: 'boss@hotel.test' }, 'ADMIN_PASSWORD'],
  [{ TRUST_PROXY: 'yes' }, 'TRUST_PROXY'],
  [{ METRICS_TOKEN: 'short' }, 'METRICS_TOKEN'],
  [{ METRICS_TOKEN: 'has a space in it, sixteen+' }, 'METRICS_TOKEN'],
  [{ CORS_ORIGINS: 'dash.example.com' }, 'CORS_ORIGINS'],
  [{ CORS_ORIGINS: 'https://ok.example.com,https://x.example.com/path' }, 'CORS_ORIGINS'],
  [{ CORS_ORIGINS: 'ftp://files.example.com' }, 'CORS_ORIGINS'],
  [{ LOG_FORMAT: 'xml' }, 'LOG_FORMAT'],
  [{ REQUEST_HEADERS_TIMEOUT_MS: 'soon' }, 'REQUEST_HEADERS_TIMEOUT_MS'],
  [{ REQUEST_TIMEOUT_MS: '0' }, 'REQUEST_TIMEOUT_MS'],
  [{ REQUEST_HEADERS_TIMEOUT_MS: '40000' }, 'REQUEST_HEADERS_TIMEOUT_MS'],
  [{ KEEP_ALIVE_TIMEOUT_MS: '-1' }, 'KEEP_ALIVE_TIMEOUT_MS'],
  [{ MAX_CONNECTIONS: '0' }, 'MAX_CONNECTIONS'],
  [{ STREAMS_PER_CALLER: '1.5' }, 'STREAMS_PER_CALLER'],
];

test('loadConfig names the bad variable in a ConfigError', () => {
  for (const [env, variable] of BAD) {
    assert.throws(
      () => loadConfig({ JWT_SECRET, ...env }),
      (err: unknown) => err instanceof ConfigError && err.variable === variable && err.message.startsWith(variable),
      JSON.stringify(env),
    );
  }
});

/** A password in a URL variable; no error may show it. */
const SECRET = 's3cr3t-pa55word';

test('a config error never shows the password of a URL', () => {
  const cases: [Record<string, string>, string][] = [
    [{ SMTP_URL: `smtp://mail:${SECRET}@mail.example.com:port`, EMAIL_FROM: 'desk@hotel.test' }, 'SMTP_URL'],
    [{ SMTP_URL: `smtp://mail:${SECRET}@mail example.com`, EMAIL_FROM: 'desk@hotel.test' }, 'SMTP_URL'],
    [{ SMTP_URL: `http://mail:${SECRET}@mail.example.com`, EMAIL_FROM: 'desk@hotel.test' }, 'SMTP_URL'],
    [{ PUBLIC_URL: `https://u:${SECRET}@api.example.com:99999` }, 'PUBLIC_URL'],
    [
      {
        TWILIO_ACCOUNT_SID: 'AC123',
        TWILIO_AUTH_TOKEN: 'token',
        PUBLIC_URL: 'https://api.example.com',
        TWILIO_API_URL: `https://AC123:${SECRET}@twilio test`,
      },
      'TWILIO_API_URL',
    ],
    [
      {
        WHATSAPP_ACCESS_TOKEN: 'token',
        WHATSAPP_PHONE_NUMBER_ID: '123',
        WHATSAPP_API_URL: `ftp://meta:${SECRET}@graph.example.com`,
      },
      'WHATSAPP_API_URL',
    ],
    [{ DATABASE_URL: `postgres://gma:${SECRET}@db:port/gma` }, 'DATABASE_URL'],
    [{ DATABASE_URL: `mysql://gma:${SECRET}@db/gma` }, 'DATABASE_URL'],
    [{ REDIS_URL: `redis://:${SECRET}@cache:port` }, 'REDIS_URL'],
    [{ REDIS_URL: `http://:${SECRET}@cache:6379` }, 'REDIS_URL'],
    [{ CORS_ORIGINS: `https://admin:${SECRET}@dash.example.com` }, 'CORS_ORIGINS'],
  ];
  for (const [env, variable] of cases) {
    assert.throws(
      () => loadConfig({ JWT_SECRET, ...env }),
      (err: unknown) => {
        assert.ok(err instanceof ConfigError && err.variable === variable, `${variable}: ${String(err)}`);
        assert.doesNotMatch(err.message, new RegExp(SECRET), variable);
        return true;
      },
    );
  }
});

/** The cases started as real processes (the rest of BAD is covered through loadConfig above). */
const SPAWNED: [Record<string, string>, string][] = [
  [{ DATABASE_URL: 'mysql://x' }, 'DATABASE_URL'],
  [{ PORT: 'abc' }, 'PORT'],
  [{ JWT_SECRET: 'short' }, 'JWT_SECRET'],
  [{ NODE_ENV: 'production', JWT_SECRET: '' }, 'JWT_SECRET'],
  [{ REDIS_URL: 'http://x' }, 'REDIS_URL'],
  [{ ADMIN_EMAIL: 'boss@hotel.test', ADMIN_PASSWORD: 'short' }, 'ADMIN_PASSWORD'],
  [{ SMTP_URL: `smtp://mail:${SECRET}@mail.example.com:port`, EMAIL_FROM: 'desk@hotel.test' }, 'SMTP_URL'],
];

test('the server refuses a bad variable: exit code 1, one stderr line naming it, no store created', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'gma-config-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const runs: { file: string; run: Run }[] = [];
  // Two at a time: each is a full Node start.
  for (let i = 0; i < SPAWNED.length; i += 2) {
    runs.push(
      ...(await Promise.all(
        SPAWNED.slice(i, i + 2).map(async ([env], j) => {
          const file = join(dir, `store-${i + j}.db`);
          const base: Record<string, string> = { JWT_SECRET, DATABASE_URL: `sqlite:${file}`, LOG_LEVEL: 'silent' };
          return { file, run: await runNode('src/server.ts', [], { ...base, ...env }) };
        }),
      )),
    );
  }
  for (const [i, { file, run }] of runs.entries()) {
    const [env, variable] = SPAWNED[i]!;
    const name = JSON.stringify(env);
    assert.equal(run.code, 1, `${name}: exit ${run.code}\n${run.stderr}`);
    const lines = run.stderr.split('\n').filter((l) => l.trim() !== '');
    assert.equal(lines.length, 1, `${name}: stderr has ${lines.length} lines:\n${run.stderr}`);
    assert.match(lines[0]!, new RegExp(`\\b${variable}\\b`), name);
    assert.doesNotMatch(lines[0]!, /\bat .*:\d+:\d+/, 'no stack trace');
    assert.doesNotMatch(run.stderr + run.stdout, new RegExp(SECRET), `${name}: a password was shown`);
    assert.equal(run.stdout.trim(), '', `${name}: nothing started`);
    assert.equal(existsSync(file), false, `${name}: the store was opened`);
  }
});

test('without JWT_SECRET outside production, the SQLite store keeps one generated secret beside it (0600)', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'gma-secret-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const env = { DATABASE_URL: `sqlite:${join(dir, 'nested', 'guest-api.db')}` };
  const first = keepGeneratedSecret(loadConfig(env));
  const second = keepGeneratedSecret(loadConfig(env));
  assert.equal(first.jwtSecretGenerated, false);
  assert.ok(first.jwtSecretFile !== null && existsSync(first.jwtSecretFile));
  assert.equal(statSync(first.jwtSecretFile).mode & 0o777, 0o600);
  assert.equal(second.jwtSecret, first.jwtSecret);
  // E-mail Message-IDs are keyed from the same kept secret, so a resend after a restart keeps its id.
  assert.ok(second.channels.messageIdKey.equals(first.channels.messageIdKey));
  assert.ok(Buffer.byteLength(first.jwtSecret) >= 32);
  // A set JWT_SECRET wins and the kept one is left alone; a throw-away store keeps nothing.
  assert.equal(keepGeneratedSecret(loadConfig({ ...env, JWT_SECRET })).jwtSecret, JWT_SECRET);
  assert.equal(keepGeneratedSecret(loadConfig({ ...env, JWT_SECRET })).jwtSecretFile, null);
  const memory = keepGeneratedSecret(loadConfig({ DATABASE_URL: 'sqlite::memory:' }));
  assert.equal(memory.jwtSecretGenerated, true);
  assert.equal(memory.jwtSecretFile, null);
  assert.notEqual(memory.jwtSecret, first.jwtSecret);
  assert.throws(() => loadConfig({ ...env, NODE_ENV: 'production' }), /JWT_SECRET/);
});
