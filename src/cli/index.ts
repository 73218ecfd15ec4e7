// Owns the command line: `migrate`, `admin:create` and `seed` (demo data, in ./seed.ts). The
// arguments are checked before the store, its drivers and the seeder are loaded, so a typo or
// `--help` answers at once.
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from '../config.js';
import { hashPassword, MIN_PASSWORD_LENGTH } from '../lib/password.js';
import { parseSeedArgs, SEED_USAGE, SeedArgsError, type SeedOptions } from './seed-options.js';

const USAGE = `Usage: npm run cli -- <command> [options]

Commands:
  migrate                                       apply pending migrations
  admin:create --email E --name N --password P  create an admin
${SEED_USAGE}`;

function fail(message: string): never {
  process.stderr.write(`${message}\n`);
  process.exit(1);
}

function parseAdminArgs(args: string[]) {
  const { values } = parseArgs({
    args,
    options: { email: { type: 'string' }, name: { type: 'string' }, password: { type: 'string' } },
  });
  const { email, name, password } = values;
  if (!email || !/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email)) fail('--email: an e-mail address is required');
  if (!name) fail('--name: a name is required');
  if (!password || [...password].length < MIN_PASSWORD_LENGTH) {
    fail(`--password: at least ${MIN_PASSWORD_LENGTH} characters are required`);
  }
  return { email, name, password };
}

async function main(argv: string[]) {
  const [command, ...rest] = argv;
  if (command === undefined || command === 'help' || command === '--help') {
    process.stdout.write(USAGE);
    return;
  }
  let seedOptions: SeedOptions | undefined;
  let force = false;
  if (command === 'seed') {
    force = rest.includes('--force');
    try {
      seedOptions = parseSeedArgs(rest.filter((a) => a !== '--force'));
    } catch (err) {
      if (err instanceof SeedArgsError) fail(`seed: ${err.message}`);
      throw err;
    }
  }
  // Arguments are checked before the store is opened: a typo must not create or migrate a store.
  let admin: { email: string; name: string; password: string } | undefined;
  if (command === 'admin:create') admin = parseAdminArgs(rest);
  else if (command !== 'migrate' && command !== 'seed') fail(`Unknown command "${command}".\n\n${USAGE}`);
  let config: ReturnType<typeof loadConfig>;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) fail(`Configuration error: ${err.message}`);
    throw err;
  }
  if (seedOptions !== undefined) {
    // The demo staff have published passwords (an admin among them): never by accident in production.
    if (config.nodeEnv === 'production' && !force) {
      fail(
        'seed: refused under NODE_ENV=production (it creates staff with published passwords); add --force to seed anyway',
      );
    }
    const { runSeed } = await import('./seed.js');
    await runSeed(config, seedOptions);
    return;
  }
  const [{ migrate }, { isUniqueViolation, openStore }, { insertStaff }] = await Promise.all([
    import('../db/migrate.js'),
    import('../db/store.js'),
    import('../modules/staff/repository.js'),
  ]);
  const store = openStore(config.store, { sqliteSynchronous: config.sqliteSynchronous });
  try {
    const applied = await migrate(store);
    if (command === 'migrate') {
      process.stdout.write(applied.length ? `Applied: ${applied.join(', ')}\n` : 'Already up to date.\n');
      return;
    }
    if (admin !== undefined) {
      const { email, name, password } = admin;
      try {
        const created = await insertStaff(store, {
          name,
          email,
          role: 'admin',
          department: null,
          passwordHash: await hashPassword(password),
        });
        process.stdout.write(`Created admin ${created.id} <${created.email}>\n`);
      } catch (err) {
        if (isUniqueViolation(err)) fail(`--email: a staff member with ${email} already exists`);
        throw err;
      }
    }
  } finally {
    await store.close();
  }
}

main(process.argv.slice(2)).catch((err) => fail(`Failed: ${err instanceof Error ? err.message : String(err)}`));
