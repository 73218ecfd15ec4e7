// Owns sampling a server process while it is under load: resident memory every 250 ms (peak kept),
// and the CPU it and the whole machine used, so a figure can be read against what was saturated.
import { execFile } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { availableParallelism, loadavg } from 'node:os';
import { promisify } from 'node:util';

const run = promisify(execFile);
const CLOCK_TICKS = 100; // USER_HZ on every Linux the kernel ships for x86 and arm.

export interface Sample {
  peakRssMiB: number;
  /** CPU seconds the server process used per wall second (1.0 = one core busy all the time). */
  serverCores: number | null;
  /** CPU the load generator (this process) used per wall second. */
  loadCores: number;
  /** CPU the PostgreSQL and Redis server processes used per wall second (null on SQLite runs). */
  storeCores: number | null;
  /** CPU everything else used per wall second: other programs on a shared machine, the kernel's threads. */
  otherCores: number | null;
  /** Share of all cores busy, whoever used them. */
  machineBusy: number | null;
  /** The 1-minute load average when the sample ended: above the CPU count, the figures are contended. */
  loadAverage: number;
}

async function rssKiB(pid: number): Promise<number | null> {
  try {
    const status = await readFile(`/proc/${pid}/status`, 'utf8');
    const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(status);
    return m ? Number(m[1]) : null;
  } catch {
    // No /proc (macOS): ps reports the same figure in KiB.
    try {
      const { stdout } = await run('ps', ['-o', 'rss=', '-p', String(pid)]);
      const n = Number(stdout.trim());
      return Number.isFinite(n) && n > 0 ? n : null;
    } catch {
      return null;
    }
  }
}

async function processTicks(pid: number): Promise<number | null> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(rest[11]) + Number(rest[12]);
  } catch {
    return null;
  }
}

/** PostgreSQL's shared helpers (they write the WAL our commits produce) and Redis count as the store. */
const PG_HELPERS = /^postgres: .*: (checkpointer|background writer|walwriter|autovacuum launcher)/;

/**
 * CPU ticks, by pid, of the store processes serving this run: PostgreSQL backends connected to
 * `database` (other databases on a shared server are other programs), PostgreSQL's helpers, Redis.
 */
async function storeTicks(database: string | null): Promise<Map<number, number> | null> {
  if (database === null) return null;
  let pids: string[];
  try {
    pids = (await readdir('/proc')).filter((d) => /^\d+$/.test(d));
  } catch {
    return null;
  }
  const out = new Map<number, number>();
  await Promise.all(
    pids.map(async (pid) => {
      try {
        const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
        const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
        if (comm === 'postgres') {
          const cmd = (await readFile(`/proc/${pid}/cmdline`, 'utf8')).replace(/\0/g, ' ');
          if (!cmd.includes(` ${database} `) && !PG_HELPERS.test(cmd)) return;
        } else if (comm !== 'redis-server') {
          return;
        }
        const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        out.set(Number(pid), Number(rest[11]) + Number(rest[12]));
      } catch {
        // The process ended while we looked.
      }
    }),
  );
  return out;
}

function storeDelta(a: Map<number, number> | null, b: Map<number, number> | null): number | null {
  if (a === null || b === null) return null;
  let ticks = 0;
  for (const [pid, t] of b) {
    const before = a.get(pid);
    if (before !== undefined) ticks += t - before;
  }
  return ticks;
}

async function machineTicks(): Promise<{ busy: number; total: number } | null> {
  try {
    const line = (await readFile('/proc/stat', 'utf8')).split('\n', 1)[0]!;
    const v = line.trim().split(/\s+/).slice(1).map(Number);
    const total = v.reduce((a, b) => a + b, 0);
    const idle = (v[3] ?? 0) + (v[4] ?? 0);
    return { busy: total - idle, total };
  } catch {
    return null;
  }
}

/** Starts sampling `pid`; `stop()` returns what was seen since. */
/** `storeDatabase`: the PostgreSQL database of the run, whose processes are counted as the store. */
export function startSampler(
  pid: number,
  storeDatabase: string | null,
  intervalMs = 250,
): { stop: () => Promise<Sample> } {
  let peak = 0;
  let pending: Promise<void> = Promise.resolve();
  const take = () => {
    pending = rssKiB(pid).then((kib) => {
      if (kib !== null && kib > peak) peak = kib;
    });
  };
  const started = performance.now();
  const cpu0 = process.cpuUsage();
  const first = Promise.all([processTicks(pid), machineTicks(), storeTicks(storeDatabase)]);
  take();
  const timer = setInterval(take, intervalMs);
  return {
    async stop() {
      clearInterval(timer);
      take();
      await pending;
      const [[p0, m0, s0], p1, m1, s1] = await Promise.all([
        first,
        processTicks(pid),
        machineTicks(),
        storeTicks(storeDatabase),
      ]);
      const seconds = (performance.now() - started) / 1000;
      const cpu = process.cpuUsage(cpu0);
      const serverCores = p0 !== null && p1 !== null ? (p1 - p0) / CLOCK_TICKS / seconds : null;
      const loadCores = (cpu.user + cpu.system) / 1e6 / seconds;
      const machineBusy =
        m0 !== null && m1 !== null && m1.total > m0.total ? (m1.busy - m0.busy) / (m1.total - m0.total) : null;
      const busyCores = machineBusy === null ? null : machineBusy * availableParallelism();
      const storeT = storeDelta(s0, s1);
      const storeCores = storeT === null ? null : storeT / CLOCK_TICKS / seconds;
      return {
        peakRssMiB: peak / 1024,
        serverCores,
        loadCores,
        storeCores,
        otherCores:
          busyCores === null || serverCores === null
            ? null
            : Math.max(0, busyCores - serverCores - loadCores - (storeCores ?? 0)),
        machineBusy,
        loadAverage: loadavg()[0] ?? 0,
      };
    },
  };
}

/**
 * On a shared machine, waits (at most `maxS` seconds) until the CPUs have been nearly idle for a
 * second, so a scenario does not start while another program is busy. Returns the seconds waited.
 */
export async function waitForQuiet(maxS: number, thresholdCores = 0.25): Promise<number> {
  const started = performance.now();
  while ((performance.now() - started) / 1000 < maxS) {
    const a = await machineTicks();
    await new Promise((r) => setTimeout(r, 1000));
    const b = await machineTicks();
    if (a === null || b === null || b.total <= a.total) return 0;
    const busyCores = ((b.busy - a.busy) / (b.total - a.total)) * availableParallelism();
    if (busyCores < thresholdCores) break;
  }
  return (performance.now() - started) / 1000;
}

/** Resident memory now (MiB), e.g. of the server idle, before any load. */
export async function rssNowMiB(pid: number): Promise<number | null> {
  const kib = await rssKiB(pid);
  return kib === null ? null : kib / 1024;
}

/** The kernel's high-water mark of the process's resident memory since it started. */
export async function highWaterMiB(pid: number): Promise<number | null> {
  try {
    const m = /^VmHWM:\s+(\d+)\s+kB/m.exec(await readFile(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : null;
  } catch {
    return null;
  }
}
