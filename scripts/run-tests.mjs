// Runs every test file under test/ (node --test on Node 20 does not expand globs for .ts files).
// Usage: node scripts/run-tests.mjs [dir or file ...]; TEST_STORE=postgres selects PostgreSQL + Redis.
// test/reliability/ (slow: real servers, crashes, load) runs only when named or with --reliability;
// scripts/reliability.mjs runs it.
//
// The files run compiled: TypeScript compiles src/, test/ and scripts/ once into .test-build/
// (tsconfig.test.json), and each test file's process loads plain JavaScript. Loading the sources
// through the tsx loader in every process cost more CPU than importing the app itself
// (docs/reliability.md, "CI time"). Source maps keep the stack traces on the .ts lines.
// TEST_TSX=1 runs the .ts files through tsx instead, with no compile step.
import { spawnSync } from 'node:child_process';
import { readdirSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const withReliability = process.argv.includes('--reliability');
const root = new URL('..', import.meta.url).pathname;
const BUILD = '.test-build';

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

const viaTsx = process.env.TEST_TSX === '1';
if (!viaTsx) {
  // A fresh build each run: a file deleted from test/ must not run from an old build.
  rmSync(join(root, BUILD), { recursive: true, force: true });
  const tsc = join(dirname(createRequire(import.meta.url).resolve('typescript/package.json')), 'bin', 'tsc');
  const built = spawnSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.test.json')], { stdio: 'inherit' });
  if (built.status !== 0) {
    console.error('The tests did not compile (tsconfig.test.json).');
    process.exit(built.status ?? 1);
  }
}
const runnable = viaTsx ? files : files.map((f) => join(BUILD, f.replace(/\.ts$/, '.js')));

const concurrency = process.env.TEST_CONCURRENCY ?? '2';
const result = spawnSync(
  process.execPath,
  [
    ...(viaTsx ? ['--import', 'tsx'] : ['--enable-source-maps']),
    '--test',
    `--test-concurrency=${concurrency}`,
    // A file whose process never exits (a handle left open) fails after this long instead of
    // holding the run, and CI, forever; no single test comes near it.
    `--test-timeout=${process.env.TEST_TIMEOUT_MS ?? 600_000}`,
    '--test-reporter=spec',
    '--test-reporter-destination=stdout',
    `--test-reporter=${new URL('./test-durations.mjs', import.meta.url).href}`,
    '--test-reporter-destination=stdout',
    ...runnable,
  ],
  { stdio: 'inherit', env: process.env },
);
process.exit(result.status ?? 1);
