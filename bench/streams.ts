// Owns the live-stream fan-out bench (issue #21): one API instance on a fresh SQLite store, N open
// GET /events/stream connections, then M writes at R per second; prints the deliveries made, the
// p50/p99 from each write's answer to each stream's arrival, and the server's RSS (idle with the
// streams open, and peak). Usage: npm run bench:streams -- [streams=1000] [messages=100] [rate=20]
// The load generator shares the machine's cores with the server: run it briefly on a shared host.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { Agent, get, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { login } from './client.js';
import { cleanupAll, freePort, onCleanup, spawnNode, stopChild, waitForHttp } from './proc.js';

const [streams = 1000, messages = 100, rate = 20] = process.argv.slice(2).map(Number);
const EMAIL = 'bench@hotel.test';
const PASSWORD = 'bench password 0123456789';

/** The server's resident memory from /proc (MiB): now, and the peak so far. */
function rss(pid: number): { now: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? 0);
  return { now: kb('VmRSS') / 1024, peak: kb('VmHWM') / 1024 };
}

function percentile(sorted: number[], p: number): number {
  return sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;
}

async function main() {
  const dir = mkdtempSync(join(tmpdir(), 'gma-bench-streams-'));
  onCleanup('remove the bench store', () => rmSync(dir, { recursive: true, force: true }));
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    NODE_ENV: 'production',
    LOG_LEVEL: 'warn',
    PORT: String(port),
    DATABASE_URL: `sqlite:${join(dir, 'bench.db')}`,
    JWT_SECRET: randomBytes(48).toString('base64url'),
    ADMIN_EMAIL: EMAIL,
    ADMIN_PASSWORD: PASSWORD,
    RATE_LIMIT_STANDARD: '10000000',
    // One token opens every stream here: lift the per-caller cap for the bench only.
    STREAMS_PER_CALLER: '10000',
  };
  const server = spawnNode(['--import', 'tsx', 'src/server.ts'], env, join(dir, 'server.log'), process.cwd());
  onCleanup('stop the server', async () => {
    await stopChild(server);
  });
  await waitForHttp(`${base}/healthz`, server);
  const token = await login(base, EMAIL, PASSWORD);
  const headers = { authorization: `Bearer ${token}` };
  const before = rss(server.pid);

  // Arrival times per message index, per stream.
  const arrivals: number[][] = Array.from({ length: messages }, () => []);
  const agent = new Agent({ keepAlive: false, maxSockets: Number.POSITIVE_INFINITY });
  let opened = 0;
  await Promise.all(
    Array.from(
      { length: streams },
      () =>
        new Promise<void>((resolve, reject) => {
          const req = get(`${base}/api/v1/events/stream`, { agent, headers }, (res) => {
            if (res.statusCode !== 200) return reject(new Error(`stream: ${res.statusCode}`));
            opened++;
            res.setEncoding('utf8');
            res.on('data', (chunk: string) => {
              const at = performance.now();
              for (const m of chunk.matchAll(/"name":"bench-(\d+)"/g)) arrivals[Number(m[1])]?.push(at);
            });
            resolve();
          });
          req.on('error', reject);
        }),
    ),
  );
  await sleep(1000);
  const idle = rss(server.pid);

  const answered: number[] = [];
  const post = (i: number) =>
    new Promise<void>((resolve, reject) => {
      const body = JSON.stringify({ name: `bench-${i}` });
      const req = request(
        `${base}/api/v1/guests`,
        { method: 'POST', headers: { ...headers, 'content-type': 'application/json' } },
        (res) => {
          res.resume();
          res.on('end', () => {
            answered[i] = performance.now();
            res.statusCode === 201 ? resolve() : reject(new Error(`POST: ${res.statusCode}`));
          });
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  const posts: Promise<void>[] = [];
  const started = performance.now();
  for (let i = 0; i < messages; i++) {
    const due = started + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 0) await sleep(wait);
    posts.push(post(i));
  }
  await Promise.all(posts);
  // Wait for the last deliveries (at most 10 s).
  const expected = streams * messages;
  const deadline = performance.now() + 10_000;
  const made = () => arrivals.reduce((n, a) => n + a.length, 0);
  while (made() < expected && performance.now() < deadline) await sleep(50);

  const latencies = arrivals.flatMap((a, i) => a.map((at) => Math.max(0, at - answered[i]!))).sort((x, y) => x - y);
  const mem = rss(server.pid);
  console.log(
    [
      `streams ${opened}/${streams}, ${messages} messages at ${rate}/s`,
      `deliveries ${made()}/${expected}`,
      `latency from the POST's answer: p50 ${percentile(latencies, 0.5).toFixed(1)} ms, p99 ${percentile(latencies, 0.99).toFixed(1)} ms`,
      `server RSS: ${before.now.toFixed(0)} MiB before the streams, ${idle.now.toFixed(0)} MiB with them open ` +
        `(${(((idle.now - before.now) * 1024) / Math.max(1, opened)).toFixed(1)} KiB per idle stream), ` +
        `${mem.peak.toFixed(0)} MiB peak`,
    ].join('\n'),
  );
  agent.destroy();
}

main()
  .catch((err) => {
    console.error(err instanceof Error ? err.message : String(err));
    process.exitCode = 1;
  })
  .finally(() => cleanupAll());
