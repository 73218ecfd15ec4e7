// Owns the benchmark's child processes and clean-up: spawning node children with their output in a
// log file, free ports, waiting for HTTP, stopping children, and undoing everything on exit or Ctrl-C.
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';

type Cleanup = { name: string; run: () => Promise<void> | void; sync?: () => void };

const cleanups: Cleanup[] = [];
const children = new Set<ChildProcess>();

/** Registers an undo step; steps run newest first, once, whether the run ends well or not. */
export function onCleanup(name: string, run: () => Promise<void> | void, sync?: () => void): void {
  cleanups.push({ name, run, sync });
}

async function drain(): Promise<void> {
  while (cleanups.length > 0) {
    const step = cleanups.pop()!;
    try {
      await step.run();
    } catch (err) {
      process.stderr.write(`clean-up "${step.name}" failed: ${err instanceof Error ? err.message : String(err)}\n`);
    }
  }
}

let draining: Promise<void> | null = null;

/** Runs every registered step; a Ctrl-C and the run's own ending share one pass, so exit waits for all of it. */
export function cleanupAll(): Promise<void> {
  if (draining === null) {
    draining = drain().finally(() => {
      draining = null;
    });
  }
  return draining;
}

let interrupted = false;

/** Ctrl-C and SIGTERM stop children and drop temp stores before exiting; a second Ctrl-C exits at once. */
export function installSignalHandlers(): void {
  const onSignal = (signal: NodeJS.Signals) => {
    if (interrupted) process.exit(130);
    interrupted = true;
    process.stderr.write(`\n${signal}: stopping servers and removing temporary stores…\n`);
    void cleanupAll().finally(() => process.exit(130));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  // Last resort for a crash: async steps cannot run here, so kill children and run the sync undos.
  process.on('exit', () => {
    for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
    for (const step of cleanups) step.sync?.();
  });
}

export function isInterrupted(): boolean {
  return interrupted;
}

export interface NodeChild {
  child: ChildProcess;
  pid: number;
  logPath: string;
  /** Resolves with the exit code (or signal name) once the process has ended. */
  exited: Promise<number | string>;
  logTail(lines?: number): string;
}

/** Starts `node <args>` with stdout and stderr in `logPath`, so a chatty child never blocks on a pipe. */
export function spawnNode(args: string[], env: NodeJS.ProcessEnv, logPath: string, cwd: string): NodeChild {
  const fd = openSync(logPath, 'a');
  const child = spawn(process.execPath, args, { cwd, env, stdio: ['ignore', fd, fd] });
  closeSync(fd);
  if (child.pid === undefined) throw new Error(`could not start node ${args.join(' ')}`);
  children.add(child);
  const exited = new Promise<number | string>((resolve) => {
    child.once('exit', (code, signal) => {
      children.delete(child);
      resolve(code ?? signal ?? 'unknown');
    });
  });
  return {
    child,
    pid: child.pid,
    logPath,
    exited,
    logTail(lines = 20) {
      try {
        return readFileSync(logPath, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
      } catch {
        return '(no output)';
      }
    },
  };
}

/** SIGTERM (the server finishes in-flight requests and exits), then SIGKILL after `graceMs`. */
export async function stopChild(c: NodeChild, graceMs = 12_000): Promise<number | string> {
  if (c.child.exitCode !== null || c.child.signalCode !== null) return c.exited;
  c.child.kill('SIGTERM');
  const timer = setTimeout(() => c.child.kill('SIGKILL'), graceMs);
  try {
    return await c.exited;
  } finally {
    clearTimeout(timer);
  }
}

/** A port free right now; the child binds it a moment later (a race only another process could win). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr !== null ? addr.port : 0;
      srv.close(() => (port > 0 ? resolve(port) : reject(new Error('no free port'))));
    });
  });
}

/** Polls `url` until it answers 200, failing early if the child exits (with its last log lines). */
export async function waitForHttp(url: string, c: NodeChild, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let exitCode: number | string | null = null;
  void c.exited.then((code) => {
    exitCode = code;
  });
  while (Date.now() < deadline) {
    if (exitCode !== null) throw new Error(`process exited (${exitCode}) before ${url} answered:\n${c.logTail()}`);
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(1000) });
      await res.arrayBuffer();
      if (res.ok) return;
    } catch {
      // Not listening yet.
    }
    await new Promise((r) => setTimeout(r, 150));
  }
  throw new Error(`${url} did not answer within ${timeoutMs / 1000} s:\n${c.logTail()}`);
}

/** Runs `node <args>` to completion, returning its stdout; stderr goes to the log (progress bars). */
export async function runNode(args: string[], env: NodeJS.ProcessEnv, logPath: string, cwd: string): Promise<string> {
  const errFd = openSync(logPath, 'a');
  const child = spawn(process.execPath, args, { cwd, env, stdio: ['ignore', 'pipe', errFd] });
  closeSync(errFd);
  children.add(child);
  const chunks: Buffer[] = [];
  child.stdout?.on('data', (b: Buffer) => chunks.push(b));
  const code = await new Promise<number | string>((resolve) => {
    child.once('exit', (c, signal) => {
      children.delete(child);
      resolve(c ?? signal ?? 'unknown');
    });
  });
  const out = Buffer.concat(chunks).toString('utf8');
  if (code !== 0) {
    let tail = '';
    try {
      tail = readFileSync(logPath, 'utf8').trimEnd().split('\n').slice(-10).join('\n');
    } catch {}
    throw new Error(`node ${args.join(' ')} exited ${code}:\n${out.slice(-2000)}\n${tail}`);
  }
  return out;
}
