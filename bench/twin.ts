// Owns the realistic mix's twin (docs/performance.md §3): how much of the mix's open-loop p99 its requests' own
// costs explain. The mix's requests are first timed one at a time against the API (bench/mix.ts,
// measureAlone). The twin is a bare Fastify route (bench/ceiling-server.ts, /spin) that, for each
// of those requests in turn, holds its event loop for that request's time alone less one offset
// (measureTwin), then answers as many bytes. It has no store, no shared state, no background work
// and a small heap: the p99 it shows at 80 % of its maximum, with the same client and schedule, is
// what a server with the mix's spread of costs gets on this machine with no stall at all. The API's
// p99 above the twin's is what stalls (GC, the dispatcher, checkpoints) add; below it, the API gains
// from what load lets it share (a commit for a batch of writes) and the twin's replay does not.
import { closedLoop, type LoadResult, openLoop, type Workload } from './http-load.js';
import { formatLoops, type LoopFigures, type LoopSettings, measureLoops } from './loops.js';
import { type AloneSample, MIX_USERS } from './mix.js';
import { startCeilingServer } from './servers.js';

export interface TwinFigures {
  loops: LoopFigures;
  /** The mix's requests alone: mean and p99 (ms), and how many were timed. */
  alone: { n: number; mean: number; p50: number; p99: number; max: number };
  /** What was taken off each request's time alone (ms): see measureTwin. */
  offsetMs: number;
  /**
   * The open loops of the mix and of its twin taken in turn, each pair a minute or less apart (the
   * first pair: the mix's loop and `loops.open`): the host's speed drifts between runs, so the mix
   * is judged against the twin of its own round.
   */
  rounds: { mix: LoadResult; twin: LoadResult }[];
}

const quantile = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;

/** The offset c (ms) at which the mean of max(0, alone − c) is `target`: the costs' spread is kept. */
function offsetFor(alone: number[], target: number): number {
  const meanAbove = (c: number) => alone.reduce((sum, x) => sum + Math.max(0, x - c), 0) / alone.length;
  if (target <= 0) return Math.max(...alone);
  let lo = 0;
  let hi = Math.max(...alone);
  if (meanAbove(lo) <= target) return 0;
  for (let i = 0; i < 60; i++) {
    const mid = (lo + hi) / 2;
    if (meanAbove(mid) > target) lo = mid;
    else hi = mid;
  }
  return hi;
}

/**
 * Replays the mix's requests timed alone on the twin. Timed alone, a request also pays what the
 * server does not spend on it under load (the round trip, waking an idle process, a commit a batch
 * would share), so each is shortened by one offset, the same for all, chosen so that the twin's
 * maximum matches the API's (`mix.closed`, the mix's closed loop): the same throughput, the costs'
 * measured spread. Then `rounds` − 1 more open loops of each in turn, `mixAgain` running the
 * mix's (the API kept running, idle while the twin runs).
 */
export async function measureTwin(
  alone: AloneSample[],
  mix: LoopFigures,
  fraction: number,
  s: LoopSettings,
  o: { cwd: string; logDir: string; rounds: number; mixAgain: () => Promise<LoadResult> },
): Promise<TwinFigures> {
  const sorted = alone.map((a) => a.ms).sort((a, b) => a - b);
  const twin = await startCeilingServer(o);
  try {
    const replay = (offsetMs: number) => {
      const paths = alone.map((a) => `/spin?us=${Math.max(0, Math.round((a.ms - offsetMs) * 1000))}&bytes=${a.bytes}`);
      // The requests in the order they were timed, each user taking the next: the mix's own sequence.
      return (): Workload => {
        let i = 0;
        return { users: MIX_USERS, next: () => ({ method: 'GET', path: paths[i++ % paths.length]! }) };
      };
    };
    // What a request costs the twin itself with no wait in it: its answer, at the same sizes.
    const bare = await closedLoop(twin.baseUrl, replay(Number.POSITIVE_INFINITY)(), 3);
    const bareMs = 1000 / Math.max(1, bare.reqPerSec);
    const offsetMs = offsetFor(
      alone.map((a) => a.ms),
      1000 / mix.closed.reqPerSec - bareMs,
    );
    const workload = replay(offsetMs);
    const loops = await measureLoops(
      twin.baseUrl,
      'twin.mix',
      "the mix's twin (its costs alone)",
      workload,
      fraction,
      s,
      null,
    );
    const rounds = [{ mix: mix.open, twin: loops.open }];
    for (let r = 1; r < o.rounds; r++) {
      const again = await o.mixAgain();
      const twinAgain = await openLoop(twin.baseUrl, workload(), loops.closed.reqPerSec * fraction, s.durationS);
      rounds.push({ mix: again, twin: twinAgain });
    }
    const mean = sorted.reduce((a, b) => a + b, 0) / Math.max(1, sorted.length);
    return {
      loops,
      alone: {
        n: sorted.length,
        mean,
        p50: quantile(sorted, 0.5),
        p99: quantile(sorted, 0.99),
        max: sorted.at(-1) ?? 0,
      },
      offsetMs,
      rounds,
    };
  } finally {
    await twin.stop();
  }
}

/** The mix's p99 over its twin's, round by round, and their median (the verdict's figure). */
export function roundRatios(rounds: TwinFigures['rounds']): { each: number[]; median: number } {
  const each = rounds.filter((r) => r.twin.p99 > 0).map((r) => r.mix.p99 / r.twin.p99);
  const sorted = [...each].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  const median =
    sorted.length === 0 ? Number.NaN : sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
  return { each, median };
}

const f1 = (n: number) => n.toFixed(1);
const f2 = (n: number) => n.toFixed(2);

export function formatTwin(t: TwinFigures, mix: LoopFigures | null, ceilingClosed: number | null): string {
  const a = t.alone;
  const lines = [
    `The mix's twin: its ${a.n.toLocaleString('en-US')} requests timed one at a time (mean ${f2(a.mean)} ms, p50 ` +
      `${f2(a.p50)}, p99 ${f2(a.p99)}, max ${f1(a.max)}), each replayed as that time less ` +
      `${f2(t.offsetMs)} ms (the twin's maximum then the API's) of the event loop held by a bare Fastify route:`,
    formatLoops([t.loops], ceilingClosed),
  ];
  if (mix !== null && t.loops.open.p99 > 0) {
    lines.push(
      `  the API's mix: p99 ${f2(mix.open.p99)} ms at 80 % of ${Math.round(mix.closed.reqPerSec)} req/s, ` +
        `${f2(mix.open.p99 / t.loops.open.p99)} × its twin's ${f2(t.loops.open.p99)} ms at 80 % of ` +
        `${Math.round(t.loops.closed.reqPerSec)} req/s`,
    );
  }
  if (t.rounds.length > 1) {
    const { each, median } = roundRatios(t.rounds);
    lines.push(
      `  in turn, round by round (mix p99 / twin p99, ms): ` +
        t.rounds.map((r, i) => `${f2(r.mix.p99)} / ${f2(r.twin.p99)} = ${f2(each[i] ?? Number.NaN)}`).join('; ') +
        `; median ${f2(median)} ×`,
    );
  }
  return lines.join('\n');
}
