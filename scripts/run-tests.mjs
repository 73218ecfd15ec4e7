// Runs every test file under test/ (node --test on Node 20 does not expand globs for .ts files).
// Usage: node scripts/run-tests.mjs [dir or file ...]; TEST_STORE=postgres selects PostgreSQL + Redis.
// test/reliability/ (slow: real servers, crashes, load) runs only when named or with --reliability;
// scripts/reliability.mjs runs it.
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

const withReliability = process.argv.includes('--reliability');

function collect(path, out, named = true) {
  if (statSync(path).isDirectory()) {
    if (!named && !withReliability && path.endsWith('reliability')) return out;
    for (const name of readdirSync(path).sort()) collect(join(path, name), out, false);
  } else if (path.endsWith('.test.ts')) {
    out.push(path);
  }
  return out;
}

const roots = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const files = (roots.length ? roots : ['test']).flatMap((r) => collect(r, []));
if (files.length === 0) {
  console.error('No test files found.');
  process.exit(1);
}
const concurrency = process.env.TEST_CONCURRENCY ?? '2';
const result = spawnSync(
  process.execPath,
  [
    '--import',
    'tsx',
    '--test',
    `--test-concurrency=${concurrency}`,
    '--test-reporter=spec',
    '--test-reporter-destination=stdout',
    `--test-reporter=${new URL('./test-durations.mjs', import.meta.url).href}`,
    '--test-reporter-destination=stdout',
    ...files,
  ],
  { stdio: 'inherit', env: process.env },
);
process.exit(result.status ?? 1);
