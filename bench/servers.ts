// Owns starting the two servers a run measures: the real API (src/server.ts, production settings,
// auth and rate limiting on with limits raised) and the bare Fastify ceiling, each a child process.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort, type NodeChild, onCleanup, spawnNode, stopChild, waitForHttp } from './proc.js';
import type { BenchStore } from './stores.js';

export interface RunningServer {
  baseUrl: string;
  proc: NodeChild;
  stop(): Promise<number | string>;
}

/** The highest value src/config.ts accepts for each limit; far above what a 10 s run can send. */
const RAISED_LIMIT = '10000000';

/** Variables of the caller's shell that would change what is measured. */
const SCRUBBED = [
  'DATABASE_URL',
  'REDIS_URL',
  'REDIS_KEY_PREFIX',
  'ADMIN_EMAIL',
  'ADMIN_PASSWORD',
  'JWT_SECRET_PREVIOUS',
  'TRUST_PROXY',
  'NODE_OPTIONS',
];

export interface ApiServerOptions {
  cwd: string;
  logDir: string;
  /** Extra node flags, e.g. --cpu-prof for the profile run. */
  nodeFlags?: string[];
  /** Extra environment for this server, e.g. the stream caps of the fan-out section. */
  env?: NodeJS.ProcessEnv;
}

/** The node flags of package.json's `start` script, so the bench runs the server as users do. */
function startFlags(cwd: string): string[] {
  const pkg = JSON.parse(readFileSync(join(cwd, 'package.json'), 'utf8')) as { scripts: { start: string } };
  return pkg.scripts.start.split(/\s+/).filter((word) => word.startsWith('--'));
}

export async function startApiServer(store: BenchStore, o: ApiServerOptions): Promise<RunningServer> {
  const port = await freePort();
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of SCRUBBED) delete env[name];
  Object.assign(env, {
    NODE_ENV: 'production',
    LOG_LEVEL: 'warn',
    HOST: '127.0.0.1',
    PORT: String(port),
    DATABASE_URL: store.databaseUrl,
    // Durable commits: the figure the write target is about.
    SQLITE_SYNCHRONOUS: 'FULL',
    JWT_SECRET: randomBytes(48).toString('base64url'),
    RATE_LIMIT_STANDARD: RAISED_LIMIT,
    RATE_LIMIT_BULK: RAISED_LIMIT,
    LOGIN_RATE_LIMIT: RAISED_LIMIT,
    // Every text goes through the dispatcher's whole claim → send → record path, without the
    // network: what a hotel with its providers configured pays per message, minus the provider.
    CHANNELS_DRY_RUN: 'true',
    // The server reports its event-loop delay on SIGUSR2 (src/server.ts); off in normal runs.
    BENCH_EVENT_LOOP: '1',
  });
  if (store.redisUrl !== null) {
    env.REDIS_URL = store.redisUrl;
    env.REDIS_KEY_PREFIX = store.redisKeyPrefix;
  }
  Object.assign(env, o.env ?? {});
  const logPath = join(o.logDir, `api-${store.kind}-${port}.log`);
  // The compiled server with the flags `npm start` gives it (`npm run bench` compiles first).
  const proc = spawnNode([...(o.nodeFlags ?? []), ...startFlags(o.cwd), 'dist/server.js'], env, logPath, o.cwd);
  const stop = () => stopChild(proc);
  onCleanup(`stop API server ${proc.pid}`, async () => {
    await stop();
  });
  const baseUrl = `http://127.0.0.1:${port}`;
  await waitForHttp(`${baseUrl}/healthz`, proc);
  return { baseUrl, proc, stop };
}

export async function startCeilingServer(o: ApiServerOptions): Promise<RunningServer> {
  const port = await freePort();
  const env: NodeJS.ProcessEnv = { ...process.env, NODE_ENV: 'production', PORT: String(port), ...o.env };
  delete env.NODE_OPTIONS;
  const logPath = join(o.logDir, `ceiling-${port}.log`);
  const proc = spawnNode(['--import', 'tsx', 'bench/ceiling-server.ts'], env, logPath, o.cwd);
  const stop = () => stopChild(proc);
  onCleanup(`stop ceiling server ${proc.pid}`, async () => {
    await stop();
  });
  const baseUrl = `http://127.0.0.1:${port}`;
  await waitForHttp(`${baseUrl}/`, proc);
  return { baseUrl, proc, stop };
}
