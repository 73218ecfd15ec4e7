// Runs every test file under test/ (node --test on Node 20 does not expand globs for .ts files).
// Usage: node scripts/run-tests.mjs [dir or file ...]; TEST_STORE=postgres selects PostgreSQL + Redis.
// test/reliability/ (slow: real servers, crashes, load) runs only when named or with --reliability;
// scripts/reliability.mjs runs it.
//
// The files run bundled: esbuild builds each test file (and the server and CLI that tests start)
// into .test-build/ once per run, and each test file's process loads plain JavaScript from a few
// files (docs/reliability.md, "Running them"). Source maps keep the stack traces on the .ts lines.
// TEST_TSX=1 runs the .ts files through tsx instead, with no build step.
import { spawnSync } from 'node:child_process';
import { readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';

const withReliability = process.argv.includes('--reliability');
const root = new URL('..', import.meta.url).pathname;
// TEST_BUILD_DIR: another folder, for runs at the same time in one checkout (scripts/reliability.mjs).
const BUILD = process.env.TEST_BUILD_DIR ?? '.test-build';

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
if (!viaTsx) await build(files);
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
  { stdio: 'inherit', env: { ...process.env, TEST_BUILD_DIR: BUILD } },
);
process.exit(result.status ?? 1);

/**
 * Bundles each test file, and the server and CLI that tests start, into .test-build/ with esbuild:
 * the modules they share are split into common chunks, and the libraries made of hundreds of small
 * ES modules (TypeBox, Kysely) are bundled into them, so a process loads a few files instead of
 * resolving and compiling hundreds (loading those was most of the cost of importing the app). Other
 * packages stay in node_modules: some read files next to their own code. No type checking here:
 * `npm run typecheck` does it.
 */
async function build(entries) {
  // A fresh build each run: a file deleted from test/ must not run from an old build.
  rmSync(join(root, BUILD), { recursive: true, force: true });
  const esbuild = await import('esbuild');
  const inline = new Set(['typebox', 'kysely']);
  const started = Date.now();
  try {
    await esbuild.build({
      absWorkingDir: root,
      entryPoints: [...entries, 'src/server.ts', 'src/cli/index.ts'],
      outdir: BUILD,
      outbase: '.',
      bundle: true,
      splitting: true,
      chunkNames: 'chunks/[name]-[hash]',
      format: 'esm',
      platform: 'node',
      target: 'node20',
      sourcemap: true,
      logLevel: 'warning',
      plugins: [
        {
          name: 'packages-outside',
          setup(b) {
            b.onResolve({ filter: /^[^./]/ }, (args) => {
              const name = args.path.startsWith('@')
                ? args.path.split('/').slice(0, 2).join('/')
                : args.path.split('/')[0];
              return inline.has(name) ? undefined : { path: args.path, external: true };
            });
          },
        },
      ],
    });
  } catch {
    console.error('The tests did not build (esbuild).');
    process.exit(1);
  }
  console.log(`built the tests in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}
