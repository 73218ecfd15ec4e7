// Runs the slow reliability suite: crash durability, delivery across a crash (SIGKILL mid-send),
// faults (private PostgreSQL and Redis, SIGTERM under load), load, and the fuzzer. Full length by
// default (5 crash rounds, 60 s of load, 10,000 fuzz requests); --short is what CI runs (2 crash
// rounds, 8 s of load; the fuzzer's 300-request sample is already part of `npm test`).
// TEST_STORE=postgres runs it on PostgreSQL + Redis.
// Usage: node scripts/reliability.mjs [--short]   (npm run test:reliability)
import { spawnSync } from 'node:child_process';

const short = process.argv.includes('--short');
const env = {
  ...process.env,
  CRASH_ROUNDS: process.env.CRASH_ROUNDS ?? (short ? '2' : '5'),
  LOAD_SECONDS: process.env.LOAD_SECONDS ?? (short ? '8' : '60'),
  FUZZ_RUNS: process.env.FUZZ_RUNS ?? '10000',
  // One file at a time: the load test measures the server, not the other tests.
  TEST_CONCURRENCY: process.env.TEST_CONCURRENCY ?? '1',
};
const roots = short ? ['test/reliability'] : ['test/reliability', 'test/fuzz'];
const started = Date.now();
const result = spawnSync(process.execPath, ['scripts/run-tests.mjs', ...roots], {
  stdio: 'inherit',
  env,
  cwd: new URL('..', import.meta.url).pathname,
});
console.log(
  `reliability (${short ? 'short' : 'full'}, ${env.TEST_STORE ?? 'sqlite'}): ${Math.round((Date.now() - started) / 1000)} s`,
);
process.exit(result.status ?? 1);
