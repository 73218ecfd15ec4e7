// Runs the API as several instances behind HAProxy on this machine, sharing one PostgreSQL and one
// Redis: `npm run cluster -- --instances 3`. It compiles the server, starts the first instance
// (which applies migrations), then the others, writes deploy/haproxy.cfg with their ports and runs
// HAProxy in the foreground. Ctrl-C (or SIGTERM) drains and stops everything.
// Usage: npm run cluster -- [--instances N] [--port 8080] [--base-port 3001]
// DATABASE_URL (postgres://…) and REDIS_URL default to the local services.

import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from './root.js';

const TEMPLATE = join(ROOT, 'deploy', 'haproxy.cfg');
/** Health checks every 1 s, out after 2 failures: a drain of 3 s covers it with a second to spare. */
export const DRAIN_MS = 3000;

/** deploy/haproxy.cfg listening on `front`, with one server line per port. */
export function haproxyConfig(front: number, ports: readonly number[]): string {
  const text = readFileSync(TEMPLATE, 'utf8');
  const servers = ports.map((p, i) => `    server api${i + 1} 127.0.0.1:${p} check`).join('\n');
  return text
    .replace(/bind 127\.0\.0\.1:\d+/, `bind 127.0.0.1:${front}`)
    .replace(/( {4}# servers[^\n]*\n)(?: {4}server [^\n]*\n?)+/, `$1${servers}\n`);
}

function option(name: string, def: number, min: number, max: number): number {
  const i = process.argv.indexOf(`--${name}`);
  if (i < 0) return def;
  const n = Number(process.argv[i + 1]);
  if (!Number.isInteger(n) || n < min || n > max) {
    process.stderr.write(`cluster: --${name} must be a whole number from ${min} to ${max}\n`);
    process.exit(2);
  }
  return n;
}

async function ready(port: number, child: ChildProcess, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`the instance on port ${port} exited during start-up`);
    try {
      if ((await fetch(`http://127.0.0.1:${port}/readyz`)).status === 200) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`the instance on port ${port} was not ready within ${timeoutMs} ms`);
}

async function main(): Promise<void> {
  const instances = option('instances', 3, 1, 16);
  const front = option('port', 8080, 1, 65535);
  const basePort = option('base-port', 3001, 1, 65535 - 16);
  const databaseUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
  if (!/^postgres(ql)?:\/\//.test(databaseUrl)) {
    process.stderr.write('cluster: DATABASE_URL must be postgres://…: instances share one PostgreSQL\n');
    process.exit(2);
  }
  if (spawnSync('haproxy', ['-v']).status !== 0) {
    process.stderr.write('cluster: haproxy is not installed (Debian: apt-get install -y haproxy)\n');
    process.exit(2);
  }
  process.stdout.write('cluster: compiling the server\n');
  if (
    spawnSync(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'], {
      cwd: ROOT,
      stdio: 'inherit',
    }).status !== 0
  ) {
    process.exit(1);
  }
  const env = {
    ...process.env,
    NODE_ENV: process.env.NODE_ENV ?? 'production',
    DATABASE_URL: databaseUrl,
    REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
    // One secret for all: a token from one instance is valid on every other.
    JWT_SECRET: process.env.JWT_SECRET ?? randomBytes(48).toString('base64url'),
    TRUST_PROXY: 'true',
    SHUTDOWN_DRAIN_MS: process.env.SHUTDOWN_DRAIN_MS ?? String(DRAIN_MS),
    HOST: '127.0.0.1',
  };
  const children: ChildProcess[] = [];
  const ports = Array.from({ length: instances }, (_, i) => basePort + i);
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    process.stdout.write('\ncluster: stopping (each instance drains first)\n');
    for (const c of children) c.kill('SIGTERM');
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  for (const [i, port] of ports.entries()) {
    const child = spawn(process.execPath, ['dist/server.js'], {
      cwd: ROOT,
      env: { ...env, PORT: String(port) },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    children.push(child);
    // The first applies the migrations; the others start once it is ready.
    if (i === 0) await ready(port, child, 60_000);
  }
  await Promise.all(children.map((c, i) => ready(ports[i]!, c, 60_000)));
  const dir = mkdtempSync(join(tmpdir(), 'gma-cluster-'));
  const cfg = join(dir, 'haproxy.cfg');
  writeFileSync(cfg, haproxyConfig(front, ports));
  const proxy = spawn('haproxy', ['-db', '-f', cfg], { stdio: ['ignore', 'inherit', 'inherit'] });
  children.push(proxy);
  process.stdout.write(
    `cluster: http://127.0.0.1:${front}/api/v1 → ${instances} instance(s) on ports ${ports.join(', ')} ` +
      `(HAProxy config ${cfg}); Ctrl-C stops\n`,
  );
  await Promise.all(children.map((c) => new Promise((r) => (c.exitCode !== null ? r(null) : c.on('close', r)))));
}

// Run as a script (not imported: bundled into a test, this module shares the test file's URL).
if (/[\\/]cluster\.[jt]s$/.test(process.argv[1] ?? '')) {
  main().catch((err: unknown) => {
    process.stderr.write(`cluster: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
