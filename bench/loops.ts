// Owns the open-loop measurements: for a workload, its closed-loop maximum with
// the bench's own client, then an open loop at a fraction of that maximum (latency from the
// scheduled send), with the server's event-loop delay over the open loop when the server reports
// it (BENCH_EVENT_LOOP=1, src/server.ts).
import { readFile } from 'node:fs/promises';
import { closedLoop, type LoadResult, openLoop, type Workload } from './http-load.js';
import type { NodeChild } from './proc.js';
import { type SendsBacklog, sendsBacklog } from './sends.js';

export interface LoopDelay {
  p50: number;
  p99: number;
  p999: number;
  max: number;
  mean: number;
  samples: number;
}

export interface LoopFigures {
  id: string;
  label: string;
  closed: LoadResult;
  /** The share of the closed-loop maximum offered in the open loop. */
  fraction: number;
  open: LoadResult;
  /** The server's event-loop delay over the open loop; null if the server does not report it. */
  loopDelay: LoopDelay | null;
  /**
   * For a workload that writes texts: those the closed loop left to send, which are sent before the
   * open loop starts (its maximum did not pay for them).
   */
  sendsAfterClosed?: SendsBacklog;
}

export interface LoopSettings {
  durationS: number;
  warmupS: number;
}

/** Asks the server for its event-loop delay since the last ask (SIGUSR2) and reads the line it writes. */
export async function readLoopDelay(server: NodeChild): Promise<LoopDelay | null> {
  const before = await readFile(server.logPath, 'utf8').catch(() => '');
  server.child.kill('SIGUSR2');
  for (let i = 0; i < 40; i++) {
    await new Promise((r) => setTimeout(r, 50));
    const text = await readFile(server.logPath, 'utf8').catch(() => '');
    const fresh = text.slice(before.length);
    const m = /\{"eventLoopDelayMs":(\{[^}]*\})\}/.exec(fresh);
    if (m) return JSON.parse(m[1]!) as LoopDelay;
  }
  return null;
}

export async function measureLoops(
  baseUrl: string,
  id: string,
  label: string,
  workload: () => Workload,
  fraction: number,
  s: LoopSettings,
  server: NodeChild | null,
  databaseUrl: string | null = null,
): Promise<LoopFigures> {
  if (s.warmupS > 0) await closedLoop(baseUrl, workload(), s.warmupS);
  if (databaseUrl !== null) await sendsBacklog(databaseUrl);
  const closed = await closedLoop(baseUrl, workload(), s.durationS);
  // Let the closed loop's tail drain (and its texts be sent) before the schedule starts.
  await new Promise((r) => setTimeout(r, 500));
  const sendsAfterClosed = databaseUrl === null ? undefined : await sendsBacklog(databaseUrl);
  if (server) await readLoopDelay(server);
  const open = await openLoop(baseUrl, workload(), closed.reqPerSec * fraction, s.durationS);
  const loopDelay = server ? await readLoopDelay(server) : null;
  return { id, label, closed, fraction, open, loopDelay, sendsAfterClosed };
}

const f1 = (n: number) => n.toFixed(1);
const f2 = (n: number) => n.toFixed(2);
const int = (n: number) => Math.round(n).toLocaleString('en-US');

export function formatLoops(rows: LoopFigures[], ceilingClosed: number | null): string {
  const head =
    `${'workload'.padEnd(40)}${'closed req/s'.padStart(13)}${'× bare'.padStart(8)}${'p99'.padStart(8)}` +
    `${'offered'.padStart(9)}${'got/s'.padStart(8)}${'p50'.padStart(9)}${'p99'.padStart(9)}${'max'.padStart(9)}` +
    `${'err'.padStart(5)}${'loop p99'.padStart(10)}${'send lag p99/max'.padStart(18)}`;
  const lines = [
    'Open loop (bench client: closed loop = max, then requests on a schedule at a share of it, latency from the',
    'scheduled send; "loop p99": the server\'s event-loop delay; "send lag": how late the sender itself was; ms):',
    head,
    '-'.repeat(head.length),
  ];
  for (const r of rows) {
    const ratio = ceilingClosed ? f2(r.closed.reqPerSec / ceilingClosed) : '-';
    lines.push(
      `${r.label.padEnd(40)}${int(r.closed.reqPerSec).padStart(13)}${ratio.padStart(8)}${f1(r.closed.p99).padStart(8)}` +
        `${`${Math.round(r.fraction * 100)}%`.padStart(9)}${int(r.open.reqPerSec).padStart(8)} ${f2(r.open.p50).padStart(8)}` +
        ` ${f2(r.open.p99).padStart(8)} ${f1(r.open.max).padStart(8)}${String(r.open.errors + r.closed.errors).padStart(5)}` +
        `${(r.loopDelay ? f2(r.loopDelay.p99) : '-').padStart(10)}` +
        `${`${f2(r.open.sendLagP99 ?? 0)} / ${f1(r.open.sendLagMax ?? 0)}`.padStart(18)}`,
    );
  }
  for (const r of rows) {
    const b = r.sendsAfterClosed;
    if (b === undefined || b.left === 0) continue;
    const took = b.drainS === null ? 'not all sent 180 s later' : `sent in ${f1(b.drainS)} s`;
    lines.push(`  ${r.label}: the closed loop left ${int(b.left)} texts to send (${took}, before the open loop)`);
  }
  for (const r of rows.filter((x) => (x.open.byKind ?? []).length > 0)) {
    lines.push(`  ${r.label}, open loop by kind (slowest p99 first; n, p50, p99, max ms):`);
    for (const k of r.open.byKind!.slice(0, 8)) {
      lines.push(
        `    ${k.kind.padEnd(36)}${String(k.n).padStart(7)}${f2(k.p50).padStart(9)}${f2(k.p99).padStart(9)}${f1(k.max).padStart(9)}`,
      );
    }
  }
  return lines.join('\n');
}
