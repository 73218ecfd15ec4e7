// Owns presenting a run: the machine it ran on, one table per store and data size, the verdict on
// each target, and the JSON file in bench/results/ that keeps the figures for comparison later.
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Machine } from './machine.js';
import type { BenchOptions } from './options.js';
import { ms, type ScenarioResult } from './scenarios.js';
import type { FanOutFigures } from './streams.js';
import type { StoreRun, Verdict } from './targets.js';

export interface RunReport {
  startedAt: string;
  finishedAt: string;
  machine: Machine;
  options: Omit<BenchOptions, 'pgBaseUrl' | 'redisUrl'>;
  ceiling: ScenarioResult;
  runs: StoreRun[];
  /** The live-stream fan-out (--streams). */
  fanOut: FanOutFigures[];
  verdicts: Verdict[];
}

const int = (n: number) => Math.round(n).toLocaleString('en-US');
const pct = (n: number | null) => (n === null ? '-' : `${Math.round(n * 100)}%`);
const cores = (n: number | null) => (n === null ? '-' : n.toFixed(2));

interface Column {
  head: string;
  width: number;
  left?: boolean;
  cell: (s: ScenarioResult) => string;
}

function columns(ceilingReqPerSec: number): Column[] {
  return [
    { head: 'scenario', width: 44, left: true, cell: (s) => (s.kind === 'diagnostic' ? `${s.label} ·diag` : s.label) },
    { head: 'req/s', width: 9, cell: (s) => int(s.reqPerSec) },
    { head: 'p50 ms', width: 7, cell: (s) => ms(s.p50) },
    { head: 'p99 ms', width: 7, cell: (s) => ms(s.p99) },
    { head: 'errors', width: 7, cell: (s) => int(s.errors) },
    {
      head: '× ceiling',
      width: 10,
      cell: (s) => (ceilingReqPerSec > 0 ? (s.reqPerSec / ceilingReqPerSec).toFixed(3) : '-'),
    },
    { head: 'srv µs/req', width: 10, cell: (s) => (s.serverUsPerRequest === null ? '-' : int(s.serverUsPerRequest)) },
    { head: 'cpu srv', width: 7, cell: (s) => cores(s.serverCores) },
    { head: 'load', width: 5, cell: (s) => cores(s.loadCores) },
    { head: 'store', width: 5, cell: (s) => cores(s.storeCores) },
    { head: 'other', width: 5, cell: (s) => cores(s.otherCores) },
    { head: 'busy', width: 5, cell: (s) => pct(s.machineBusy) },
    { head: 'RSS MiB', width: 8, cell: (s) => s.peakRssMiB.toFixed(0) },
  ];
}

function row(cols: Column[], cells: string[]): string {
  return cols
    .map((c, i) => {
      const v = cells[i] ?? '';
      const text = v.length > c.width ? `${v.slice(0, c.width - 1)}…` : v;
      return c.left ? text.padEnd(c.width) : text.padStart(c.width);
    })
    .join('  ');
}

export function formatTable(rows: ScenarioResult[], ceilingReqPerSec: number): string {
  const cols = columns(ceilingReqPerSec);
  const line = (cell: (c: Column) => string) => row(cols, cols.map(cell));
  const lines = [line((c) => c.head), line((c) => '-'.repeat(c.width))];
  for (const s of rows) lines.push(line((c) => c.cell(s)));
  return lines.join('\n');
}

export function formatRun(run: StoreRun, ceiling: ScenarioResult): string {
  const name = run.store === 'sqlite' ? 'SQLite' : 'PostgreSQL + Redis';
  const head =
    `\n${name} · ${run.size.label} conversations ` +
    `(${int(run.size.guests)} guests, ${int(run.size.messages)} messages; seeded in ${run.seedSeconds.toFixed(1)} s` +
    `${run.vacuumSeconds === null ? '' : ` + vacuum analyze ${run.vacuumSeconds.toFixed(1)} s`}; ${run.durability})`;
  const foot =
    `ceiling (bare Fastify): ${int(ceiling.reqPerSec)} req/s, p50 ${ms(ceiling.p50)} ms, p99 ${ms(ceiling.p99)} ms · ` +
    `server RSS idle ${run.idleRssMiB?.toFixed(0) ?? '-'} MiB, peak under load ${run.peakRssMiB.toFixed(0)} MiB` +
    (run.rssHighWaterMiB !== null ? ` (kernel high-water ${run.rssHighWaterMiB.toFixed(0)} MiB)` : '');
  return `${head}\n${formatTable(run.scenarios, ceiling.reqPerSec)}\n${foot}${contention([ceiling, ...run.scenarios])}`;
}

/** Flags scenarios during which other programs took a real share of the CPUs the figures depend on. */
function contention(rows: ScenarioResult[]): string {
  const busy = rows.filter((s) => (s.otherCores ?? 0) > 0.25);
  if (busy.length === 0) return '';
  const list = busy.map((s) => `${s.id} ${cores(s.otherCores)}`).join(', ');
  return `\nWARNING: other programs used CPU (cores) during: ${list}; req/s and latency are understated there`;
}

export function formatVerdicts(verdicts: Verdict[]): string {
  if (verdicts.length === 0) return '';
  const lines = ['\nTargets (docs/performance.md §3):'];
  for (const v of verdicts) {
    const verdict = v.pass === null ? 'NOTE' : v.pass ? 'PASS' : 'FAIL';
    lines.push(`  ${verdict}  ${v.target.padEnd(58)} ${v.scope.padEnd(26)} ${v.measured}`);
  }
  return lines.join('\n');
}

export function formatMachine(m: Machine, o: BenchOptions): string {
  return (
    `Machine: ${m.cpus} CPUs (${m.cpuModel}), ${int(m.memoryMiB)} MiB, Linux ${m.kernel}, Node ${m.node}` +
    `${m.postgres ? `, ${m.postgres}` : ''}\n` +
    (m.disk
      ? `Disk: 4 KiB write + fdatasync p50 ${m.disk.p50Ms.toFixed(2)} ms, p99 ${m.disk.p99Ms.toFixed(2)} ms ` +
        `(${int(m.disk.perSecond)} durable commits/s at most, one at a time)\n`
      : '') +
    `Load: autocannon, ${o.connections} connections, pipelining 1, closed loop (each sends when answered), ` +
    `${o.warmupS} s warm-up + ${o.durationS} s per scenario, ` +
    'in this process (it shares the CPUs with the server).\n' +
    '"srv µs/req": the server\'s CPU time per request. CPU in cores (1.00 = one CPU all the time): "srv" the API server,\n' +
    '"load" autocannon (this process), "store" PostgreSQL + Redis, "other" any other program; "busy": share of all CPUs.'
  );
}

export async function writeResults(dir: string, report: RunReport): Promise<string> {
  await mkdir(dir, { recursive: true });
  const stamp = report.startedAt.replace(/[:.]/g, '-');
  const file = join(dir, `${stamp}.json`);
  await writeFile(file, `${JSON.stringify(report, null, 2)}\n`);
  return file;
}
