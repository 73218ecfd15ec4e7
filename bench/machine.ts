// Owns describing the machine a run was measured on: CPUs, memory, Node, and how fast its disk
// makes a small write durable, which bounds any synchronous=FULL commit rate.
import { close, fdatasync, open, rm, write } from 'node:fs';
import { availableParallelism, cpus, release, totalmem } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const openP = promisify(open);
const writeP = promisify(write);
const syncP = promisify(fdatasync);
const closeP = promisify(close);
const rmP = promisify(rm);

export interface DiskSync {
  /** 4 KiB written then fdatasync'd, one at a time, as a durable commit of one small row does. */
  samples: number;
  p50Ms: number;
  p99Ms: number;
  perSecond: number;
}

export interface Machine {
  cpus: number;
  cpuModel: string;
  memoryMiB: number;
  kernel: string;
  node: string;
  versions: NodeJS.ProcessVersions;
  disk: DiskSync | null;
  postgres?: string;
}

export async function measureDiskSync(dir: string, samples = 300): Promise<DiskSync | null> {
  const file = join(dir, 'fsync-probe.bin');
  const buf = Buffer.alloc(4096, 7);
  const times: number[] = [];
  try {
    const fd = await openP(file, 'w');
    try {
      for (let i = 0; i < samples; i++) {
        const t0 = performance.now();
        await writeP(fd, buf, 0, buf.length, i * buf.length);
        await syncP(fd);
        times.push(performance.now() - t0);
      }
    } finally {
      await closeP(fd);
      await rmP(file, { force: true });
    }
  } catch {
    return null;
  }
  times.sort((a, b) => a - b);
  const mean = times.reduce((a, b) => a + b, 0) / times.length;
  return {
    samples,
    p50Ms: times[Math.floor(samples * 0.5)]!,
    p99Ms: times[Math.floor(samples * 0.99)]!,
    perSecond: 1000 / mean,
  };
}

export async function machine(tmpDir: string): Promise<Machine> {
  return {
    cpus: availableParallelism(),
    cpuModel: cpus()[0]?.model ?? 'unknown',
    memoryMiB: Math.round(totalmem() / 2 ** 20),
    kernel: release(),
    node: process.version,
    versions: process.versions,
    disk: await measureDiskSync(tmpDir),
  };
}
