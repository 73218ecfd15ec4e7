// Owns the issue's performance targets and judging a run against each one it can judge
// (the 1M-versus-10k latency target needs --full; the others are judged per store and size).

import type { DepthFigures } from './depth.js';
import type { LoopFigures } from './loops.js';
import type { DataSize, StoreKind } from './options.js';
import { ms, type ScenarioResult } from './scenarios.js';
import type { StatementCost } from './sql-costs.js';
import type { TwinFigures } from './twin.js';

export interface StoreRun {
  store: StoreKind;
  size: DataSize;
  seedSeconds: number;
  /** PostgreSQL: the VACUUM ANALYZE after seeding (statistics and visibility map, as in service). */
  vacuumSeconds: number | null;
  /** The durability settings the write figures were taken under. */
  durability: string;
  scenarios: ScenarioResult[];
  peakRssMiB: number;
  /** The server's resident memory after start-up and log-in, before any load. */
  idleRssMiB: number | null;
  /** The kernel's resident-memory high-water mark for the whole server process life. */
  rssHighWaterMiB: number | null;
  /** SQLite runs: each statement of the read paths timed alone on the seeded file. */
  sqlCosts?: StatementCost[];
  /** The depth figures of each list. */
  depth?: DepthFigures[];
  /** The fresh list and the mix: closed-loop maximum, then an open loop at a share of it. */
  loops?: LoopFigures[];
  /** Bare Fastify's own open loops in the same run, for scale. */
  ceilingLoops?: LoopFigures[];
  /** The mix's requests timed alone, which its twin (loop `twin.mix`) replays (bench/twin.ts). */
  twin?: Pick<TwinFigures, 'alone' | 'offsetMs' | 'rounds'>;
}

export interface Verdict {
  target: string;
  scope: string;
  measured: string;
  /** null: reported, not judged. */
  pass: boolean | null;
}

/** The scenarios that only read: the p99 target is judged on these. */
const READS = new Set(['conversations.list', 'guests.search', 'messages.list']);

export const TARGETS = {
  /** The fresh list against its floor in the same run, on each store (issue 39). */
  floorRatio: 0.9,
  p99Ms: 10,
  p50Growth: 2,
  postPerSec: 3000,
  rssMiB: 200,
} as const;

/** PostgreSQL + Redis has a POST target of its own (docs/performance.md §3). */
const PG_TARGETS = { postPerSec: 2000 } as const;

/** The POST target a run is judged by: SQLite's, or PostgreSQL's own. */
const targetsOf = (run: StoreRun) => (run.store === 'postgres' ? PG_TARGETS : { postPerSec: TARGETS.postPerSec });

const find = (run: StoreRun, id: string) => run.scenarios.find((s) => s.id === id);
const scopeOf = (run: StoreRun) => `${run.store} ${run.size.label}`;

export function judge(runs: StoreRun[], ceiling: ScenarioResult, connections: number): Verdict[] {
  const ceilingReqPerSec = ceiling.reqPerSec;
  const out: Verdict[] = [];
  for (const run of runs) {
    const scope = scopeOf(run);
    const goal = targetsOf(run);
    const list = find(run, 'conversations.list');
    if (list && ceilingReqPerSec > 0) {
      const ratio = list.reqPerSec / ceilingReqPerSec;
      // The same ratio from server CPU per request: what it would be with a core to spare for each
      // server, which a shared or small machine (load generator on the same CPUs) does not give.
      const cpu =
        ceiling.serverUsPerRequest !== null && list.serverUsPerRequest !== null
          ? `; by server CPU per request ${(ceiling.serverUsPerRequest / list.serverUsPerRequest).toFixed(3)} ×`
          : '';
      // The server inherits the bench's environment: PAGE_CACHE=false reads every page fresh; else the
      // scenario's repeated page is answered from the page cache (docs/decisions.md).
      const listName =
        process.env.PAGE_CACHE === 'false'
          ? 'conversation list (PAGE_CACHE=false: fresh)'
          : 'conversation list (page cache)';
      // Reported: the floor itself is 0.08-0.15 × bare Fastify, so a ratio to bare is no target (issue 39).
      out.push({
        target: `${listName}, × bare Fastify req/s`,
        scope,
        measured: `${ratio.toFixed(3)} × (${Math.round(list.reqPerSec)} / ${Math.round(ceilingReqPerSec)} req/s)${cpu}`,
        pass: null,
      });
      const floor = find(run, 'floor.list');
      const floorJson = find(run, 'floor.list-json');
      if (floor) {
        const of = (r: ScenarioResult) => `${(r.reqPerSec / ceilingReqPerSec).toFixed(3)} ×`;
        const json = floorJson ? `; with SQLite writing the JSON ${of(floorJson)} × bare` : '';
        const toFloor = floor.reqPerSec > 0 ? list.reqPerSec / floor.reqPerSec : 0;
        out.push({
          target: `${listName} ≥ ${TARGETS.floorRatio} × its floor (its statement in bare Fastify, no auth)`,
          scope,
          measured: `${toFloor.toFixed(2)} × (${Math.round(list.reqPerSec)} / ${Math.round(floor.reqPerSec)} req/s); the floor ${of(floor)} bare${json}`,
          pass: toFloor >= TARGETS.floorRatio,
        });
      }
    }
    // p99 is judged on the reads. A write scenario's latency in a closed loop is bounded below by
    // Little's law: each of the connections always has one request waiting, so the mean latency is
    // connections ÷ throughput (16.7 ms at 50 connections and the 3,000/s write target), and a
    // p99 of 10 ms would need over 5,000 durable writes/s. Writes are reported with that bound.
    const reads = run.scenarios.filter((s) => s.kind === 'target' && READS.has(s.id));
    if (reads.length > 0) {
      const worst = reads.reduce((a, b) => (b.p99 > a.p99 ? b : a));
      // A scenario that got no answer at all (every request timed out) has no p99 to show, and fails.
      const over = reads.filter((s) => s.p99 > TARGETS.p99Ms || s.requests === 0).map((s) => s.id);
      out.push({
        target: `p99 ≤ ${TARGETS.p99Ms} ms at ${connections} connections, every read`,
        scope,
        // Bare Fastify's own p99 in this run, for scale: on a host period where even it is over
        // the target, no server on these cores can be under it.
        measured:
          `worst ${ms(worst.p99)} ms (${worst.id})${over.length > 0 ? `; over: ${over.join(', ')}` : ''}` +
          `; bare Fastify's own p99 ${ms(ceiling.p99)} ms`,
        pass: over.length === 0,
      });
    }
    const writes = run.scenarios.filter((s) => s.kind === 'target' && !READS.has(s.id) && s.requests > 0);
    if (writes.length > 0) {
      out.push({
        target: `p99 with writes (closed loop: mean ≥ ${connections} ÷ req/s)`,
        scope,
        measured: writes
          .map((s) => `${s.id} ${ms(s.p99)} ms (mean ${((connections / s.reqPerSec) * 1000).toFixed(1)} ms)`)
          .join('; '),
        pass: null,
      });
    }
    const post = find(run, 'messages.post');
    if (post) {
      out.push({
        target: `durable POST messages ≥ ${goal.postPerSec}/s (${run.durability})`,
        scope,
        // Server CPU per POST beside bare Fastify's per request: the host's speed moves both.
        measured:
          `${Math.round(post.reqPerSec)}/s` +
          (post.serverUsPerRequest !== null && ceiling.serverUsPerRequest !== null
            ? ` (${Math.round(post.serverUsPerRequest)} µs server CPU per POST; bare Fastify ${Math.round(ceiling.serverUsPerRequest)} µs per request)`
            : ''),
        pass: post.reqPerSec >= goal.postPerSec && post.errors === 0,
      });
      // The POST answers once its text is stored; the dispatcher sends it afterwards, and under this
      // load it falls behind. Reported beside the target: the rate at which texts were also sent.
      if (post.sends !== undefined) {
        out.push({
          target: 'the same POSTs with their sends (until the last text was sent)',
          scope,
          measured:
            post.sentPerSec === undefined
              ? `${post.sends.left} texts still pending 180 s after the load`
              : `${Math.round(post.sentPerSec)}/s (${post.sends.left} texts left when the load stopped, sent in ${post.sends.drainS!.toFixed(1)} s)`,
          pass: null,
        });
      }
    }
    if (run.scenarios.length > 0)
      out.push({
        target: `server RSS ≤ ${TARGETS.rssMiB} MiB under load`,
        scope,
        measured: `peak ${run.peakRssMiB.toFixed(0)} MiB (sampled every 250 ms)`,
        pass: run.peakRssMiB <= TARGETS.rssMiB,
      });
  }
  // p50 growth from 10k to 1M conversations, per store: needs both sizes in this run.
  for (const store of new Set(runs.map((r) => r.store))) {
    const bySize = runs.filter((r) => r.store === store).sort((a, b) => a.size.conversations - b.size.conversations);
    const small = bySize[0];
    const large = bySize.at(-1);
    if (small === undefined || large === undefined || small === large) continue;
    const a = find(small, 'conversations.list');
    const b = find(large, 'conversations.list');
    if (!a || !b) continue;
    // Latencies are timed to the microsecond (scenarios.ts), so the ratio is of the figures themselves.
    const growth = a.p50 > 0 ? b.p50 / a.p50 : Number.POSITIVE_INFINITY;
    out.push({
      target: `conversation list p50 at ${large.size.label} ≤ ${TARGETS.p50Growth} × p50 at ${small.size.label}`,
      scope: store,
      measured: `${ms(b.p50)} ms vs ${ms(a.p50)} ms = ${growth.toFixed(2)} ×`,
      pass: growth <= TARGETS.p50Growth,
    });
  }
  return out;
}
