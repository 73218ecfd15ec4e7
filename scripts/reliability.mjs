// Runs the slow reliability suite: crash durability, delivery across a crash (SIGKILL mid-send),
// faults (private PostgreSQL and Redis, SIGTERM under load), load, and the fuzzer. Full length by
// default (5 crash rounds, 60 s of load, 10,000 fuzz requests); --short is what CI runs (2 crash
// rounds, 8 s of load; the fuzzer's 300-request sample is already part of `npm test`).
// TEST_STORE=postgres runs it on PostgreSQL + Redis.
// The load test runs alone (it measures the server, not the other tests); the others spend most of
// their time waiting for a moment to come (a crash, a restart, a due step), so they run side by side
// (RELIABILITY_CONCURRENCY, default 2).
// Usage: node scripts/reliability.mjs [--short]   (npm run test:reliability)
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';

const short = process.argv.includes('--short');
const root = new URL('..', import.meta.url).pathname;
const env = {
  ...process.env,
  CRASH_ROUNDS: process.env.CRASH_ROUNDS ?? (short ? '2' : '5'),
  LOAD_SECONDS: process.env.LOAD_SECONDS ?? (short ? '8' : '60'),
  FUZZ_RUNS: process.env.FUZZ_RUNS ?? '10000',
};
const LOAD = 'test/reliability/load.test.ts';
const others = readdirSync(new URL('../test/reliability', import.meta.url))
  .filter((name) => name.endsWith('.test.ts'))
  .map((name) => `test/reliability/${name}`)
  .filter((path) => path !== LOAD);
const runs = [
  { files: [LOAD], concurrency: '1' },
  { files: short ? others : [...others, 'test/fuzz'], concurrency: process.env.RELIABILITY_CONCURRENCY ?? '2' },
];
const started = Date.now();
let status = 0;
for (const { files, concurrency } of runs) {
  const result = spawnSync(process.execPath, ['scripts/run-tests.mjs', ...files], {
    stdio: 'inherit',
    env: { ...env, TEST_CONCURRENCY: process.env.TEST_CONCURRENCY ?? concurrency },
    cwd: root,
  });
  if ((result.status ?? 1) !== 0) status = result.status ?? 1;
}
console.log(
  `reliability (${short ? 'short' : 'full'}, ${env.TEST_STORE ?? 'sqlite'}): ${Math.round((Date.now() - started) / 1000)} s`,
);
process.exit(status);
