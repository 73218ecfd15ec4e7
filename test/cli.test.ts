// The first admin (README): the CLI migrates and creates admins on a real store, and an
// empty store gets its admin from ADMIN_EMAIL/ADMIN_PASSWORD (or a generated one) at start-up.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ensureAdmin } from '../src/bootstrap.js';
import { login } from './fixtures.js';
import { buildTestApp, call, freshDatabaseUrl, JWT_SECRET, runNode, TEST_STORE } from './helpers.js';

const ADMIN_PASSWORD = 'the first admin password';

const cli = (databaseUrl: string, ...args: string[]) =>
  runNode('src/cli/index.ts', args, { DATABASE_URL: databaseUrl, JWT_SECRET, LOG_LEVEL: 'silent' });

test('migrate then admin:create makes an admin who logs in through the API; a duplicate exits 1', async (t) => {
  const url = await freshDatabaseUrl(t);
  const migrated = await cli(url, 'migrate');
  assert.equal(migrated.code, 0, migrated.stderr);
  assert.match(migrated.stdout, /001-initial/);
  const again = await cli(url, 'migrate');
  assert.equal(again.code, 0, again.stderr);
  assert.match(again.stdout, /up to date/i);

  const created = await cli(
    url,
    'admin:create',
    '--email',
    'Boss@Hotel.test',
    '--name',
    'Bea Boss',
    '--password',
    ADMIN_PASSWORD,
  );
  assert.equal(created.code, 0, created.stderr);
  const id = /\b(stf_[0-9a-z]{26})\b/.exec(created.stdout)?.[1];
  assert.ok(id, created.stdout);
  assert.doesNotMatch(created.stdout + created.stderr, new RegExp(ADMIN_PASSWORD));

  const dup = await cli(
    url,
    'admin:create',
    '--email',
    'boss@hotel.TEST',
    '--name',
    'Other',
    '--password',
    ADMIN_PASSWORD,
  );
  assert.equal(dup.code, 1);
  assert.match(dup.stderr, /--email/);
  assert.match(dup.stderr, /already exists/);

  const app = await buildTestApp(t, { DATABASE_URL: url });
  const session = await login(app, 'boss@hotel.test', ADMIN_PASSWORD);
  assert.equal(session.status, 200);
  assert.deepEqual(session.data.user, { id, name: 'Bea Boss', email: 'Boss@Hotel.test', role: 'admin' });
  const list = await call(app, 'GET', '/staff', { token: session.data.token });
  assert.equal(list.body.meta.total, 1, 'the duplicate was not created');
});

test('the CLI refuses a short password, an unknown command and a bad DATABASE_URL with exit code 1', async (t) => {
  const url = await freshDatabaseUrl(t);
  assert.equal((await cli(url, 'migrate')).code, 0);
  const [short, unknown, badUrl] = await Promise.all([
    cli(url, 'admin:create', '--email', 'x@hotel.test', '--name', 'X', '--password', 'short'),
    cli(url, 'frobnicate'),
    cli('mysql://x', 'migrate'),
  ]);
  for (const [run, expected] of [
    [short, /--password/],
    [unknown, /Unknown command/],
    [badUrl, /DATABASE_URL/],
  ] as const) {
    assert.equal(run.code, 1, `${run.stdout} ${run.stderr}`);
    assert.match(run.stderr, expected);
  }
});

test('on an empty store ADMIN_EMAIL/ADMIN_PASSWORD create that admin once', async (t) => {
  const app = await buildTestApp(t, { ADMIN_EMAIL: 'owner@hotel.test', ADMIN_PASSWORD });
  const created = await ensureAdmin(app.ctx.store, app.ctx.config);
  assert.deepEqual(created, { email: 'owner@hotel.test' });
  assert.equal(await ensureAdmin(app.ctx.store, app.ctx.config), null, 'not again once staff exist');
  const session = await login(app, 'Owner@hotel.test', ADMIN_PASSWORD);
  assert.equal(session.status, 200);
  assert.equal(session.data.user.role, 'admin');
});

test('without ADMIN_* an empty store gets admin@example.com with a generated password shown once', async (t) => {
  const app = await buildTestApp(t);
  const created = await ensureAdmin(app.ctx.store, app.ctx.config);
  assert.equal(created?.email, 'admin@example.com');
  assert.ok(created?.generatedPassword && created.generatedPassword.length >= 12);
  const session = await login(app, 'admin@example.com', created.generatedPassword);
  assert.equal(session.status, 200);
  assert.equal(session.data.user.role, 'admin');
});

test('instances starting together on one empty store create the first admin once and all start', async (t) => {
  const app = await buildTestApp(t, { ADMIN_EMAIL: 'owner@hotel.test', ADMIN_PASSWORD });
  const results = await Promise.allSettled([
    ensureAdmin(app.ctx.store, app.ctx.config),
    ensureAdmin(app.ctx.store, app.ctx.config),
    ensureAdmin(app.ctx.store, app.ctx.config),
  ]);
  for (const r of results) assert.equal(r.status, 'fulfilled', r.status === 'rejected' ? String(r.reason) : '');
  const made = results.filter((r) => r.status === 'fulfilled' && r.value !== null);
  assert.equal(made.length, 1, `${TEST_STORE}: ${made.length} instances reported creating the admin`);
  const n = await app.ctx.store.db
    .selectFrom('staff')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  assert.equal(Number(n.n), 1);
});

test('processes migrating one fresh store at the same time all succeed', async (t) => {
  const url = await freshDatabaseUrl(t);
  const runs = await Promise.all([cli(url, 'migrate'), cli(url, 'migrate'), cli(url, 'migrate')]);
  for (const run of runs) assert.equal(run.code, 0, run.stderr);
});
