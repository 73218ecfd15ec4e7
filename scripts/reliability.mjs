// Runs the slow reliability suite: crash durability, delivery across a crash (SIGKILL mid-send),
// faults (private PostgreSQL and Redis, SIGTERM under load), load, and the fuzzer. Full length by
// default (5 crash rounds, 60 s of load, 10,000 fuzz requests); --short is what CI runs (2 crash
// rounds, 8 s of load; the fuzzer's 300-request sample is already part of `npm test`).
// TEST_STORE=postgres runs it on PostgreSQL + Redis; --stores sqlite,postgres on both.
// The load test runs alone (it measures the server, not the other tests), once per store; the
// others spend most of their time waiting for a moment to come (a crash, a restart, a due step), so
// they run side by side (RELIABILITY_CONCURRENCY files at a time per store, default 2), the stores'
// runs at the same time, each built into a folder of its own.
// Usage: node scripts/reliability.mjs [--short] [--stores sqlite,postgres]   (npm run test:reliability)
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';

const short = process.argv.includes('--short');
const storesAt = process.argv.indexOf('--stores');
const stores = (storesAt === -1 ? (process.env.TEST_STORE ?? 'sqlite') : process.argv[storesAt + 1]).split(',');
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

/** Runs files on one store; with several runs at once, each line says its store. */
function run(files, store, concurrency, tagged) {
  const child = spawn(process.execPath, ['scripts/run-tests.mjs', ...files], {
    stdio: tagged ? ['ignore', 'pipe', 'pipe'] : 'inherit',
    env: {
      ...env,
      TEST_STORE: store,
      TEST_BUILD_DIR: `.test-build-${store}`,
      TEST_CONCURRENCY: process.env.TEST_CONCURRENCY ?? concurrency,
    },
    cwd: root,
  });
  if (tagged) {
    for (const [from, to] of [
      [child.stdout, process.stdout],
      [child.stderr, process.stderr],
    ]) {
      let rest = '';
      from.setEncoding('utf8');
      from.on('data', (chunk) => {
        const lines = (rest + chunk).split('\n');
        rest = lines.pop();
        for (const line of lines) to.write(`[${store}] ${line}\n`);
      });
      from.on('end', () => rest && to.write(`[${store}] ${rest}\n`));
    }
  }
  return new Promise((resolve) => child.on('close', (code) => resolve(code ?? 1)));
}

const started = Date.now();
let status = 0;
for (const store of stores) {
  const code = await run([LOAD], store, '1', false);
  if (code !== 0) status = code;
}
const rest = short ? others : [...others, 'test/fuzz'];
const codes = await Promise.all(
  stores.map((store) => run(rest, store, process.env.RELIABILITY_CONCURRENCY ?? '2', stores.length > 1)),
);
for (const code of codes) if (code !== 0) status = code;
console.log(
  `reliability (${short ? 'short' : 'full'}, ${stores.join(' + ')}): ${Math.round((Date.now() - started) / 1000)} s`,
);
process.exit(status);
