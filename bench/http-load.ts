// Owns the bench's own HTTP load generator (node:http, keep-alive): a closed loop (each virtual
// user sends its next request when the last one answered: the most the server can do) and an open
// loop (requests sent on a fixed schedule whatever the server does, each timed from the moment it
// was due, as wrk2 does), so a stall shows in the latency of every request it delayed instead of
// slowing the sender down with it (coordinated omission).
import { Agent, request as httpRequest } from 'node:http';

export interface LoadRequest {
  method: 'GET' | 'POST' | 'PATCH';
  path: string;
  headers?: Record<string, string>;
  body?: string;
  /** What sort of request it is, for the latency by kind (the mix's). */
  kind?: string;
}

/** What the sender learns from an answer (a list's nextCursor, for a walk). */
export interface Answer {
  status: number;
  body: string;
}

/** Makes the next request of virtual user `user`; `seen` gets its answer. */
export interface Workload {
  users: number;
  next(user: number): LoadRequest;
  seen?(user: number, req: LoadRequest, answer: Answer): void;
}

export interface LoadResult {
  durationS: number;
  sent: number;
  answered: number;
  reqPerSec: number;
  /** Non-2xx answers and socket errors. */
  errors: number;
  statusCodes: Record<string, number>;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  /** Open loop: the rate asked for, and how late (ms) the sender itself was at p99 (its own limit). */
  offeredPerSec?: number;
  sendLagP99?: number;
  /** Open loop: the sender's longest lateness (ms): a stall of the bench process itself. */
  sendLagMax?: number;
  /** Open loop: latency by the requests' kind, slowest p99 first. */
  byKind?: { kind: string; n: number; p50: number; p99: number; max: number }[];
}

class Recorder {
  private values = new Float64Array(1 << 16);
  n = 0;
  add(v: number): void {
    if (this.n === this.values.length) {
      const grown = new Float64Array(this.values.length * 2);
      grown.set(this.values);
      this.values = grown;
    }
    this.values[this.n++] = v;
  }
  /** Nearest-rank percentiles, as HdrHistogram reads them. */
  percentiles(): { p50: number; p90: number; p99: number; max: number } {
    if (this.n === 0) return { p50: 0, p90: 0, p99: 0, max: 0 };
    const sorted = this.values.subarray(0, this.n).sort();
    const at = (q: number) => sorted[Math.min(this.n - 1, Math.max(0, Math.ceil((q / 100) * this.n) - 1))]!;
    return { p50: at(50), p90: at(90), p99: at(99), max: sorted[this.n - 1]! };
  }
}

const nowMs = () => performance.now();

/** One request on `agent`'s connections; a socket error or timeout answers status 0. */
export function send(base: URL, agent: Agent, r: LoadRequest): Promise<Answer> {
  return new Promise((resolve) => {
    const headers: Record<string, string | number> = { ...r.headers };
    if (r.body !== undefined) {
      headers['content-type'] = 'application/json';
      headers['content-length'] = Buffer.byteLength(r.body);
    }
    const req = httpRequest(
      { host: base.hostname, port: base.port, method: r.method, path: r.path, headers, agent },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', () => resolve({ status: 0, body: '' }));
      },
    );
    req.setTimeout(10_000, () => req.destroy());
    req.on('error', () => resolve({ status: 0, body: '' }));
    req.end(r.body);
  });
}

function finish(
  started: number,
  ended: number,
  sent: number,
  latency: Recorder,
  codes: Record<string, number>,
  errors: number,
): LoadResult {
  const durationS = (ended - started) / 1000;
  return {
    durationS,
    sent,
    answered: latency.n,
    reqPerSec: latency.n / durationS,
    errors,
    statusCodes: codes,
    ...latency.percentiles(),
  };
}

/** Each user keeps one request in flight for `durationS`: the highest rate the server sustains. */
export async function closedLoop(baseUrl: string, w: Workload, durationS: number): Promise<LoadResult> {
  const base = new URL(baseUrl);
  const agent = new Agent({ keepAlive: true, maxSockets: w.users });
  const latency = new Recorder();
  const codes: Record<string, number> = {};
  let errors = 0;
  let sent = 0;
  const started = nowMs();
  const deadline = started + durationS * 1000;
  const user = async (u: number) => {
    while (nowMs() < deadline) {
      const r = w.next(u);
      const t0 = nowMs();
      sent++;
      const a = await send(base, agent, r);
      const t1 = nowMs();
      codes[a.status] = (codes[a.status] ?? 0) + 1;
      if (a.status < 200 || a.status > 299) errors++;
      // Only answers within the window count: the last ones' would stretch it.
      if (t1 <= deadline) latency.add(t1 - t0);
      w.seen?.(u, r, a);
    }
  };
  await Promise.all(Array.from({ length: w.users }, (_, u) => user(u)));
  agent.destroy();
  return finish(started, deadline, sent, latency, codes, errors);
}

/** Connections an open loop opens before its schedule starts (`warmPath` answers each). */
const OPENED_FIRST = 64;

/**
 * Sends `ratePerSec` requests a second on schedule for `durationS` (users in turn), each timed from
 * when it was due: a request the sender could only send late, or that waited for a connection,
 * is charged that wait. OPENED_FIRST connections are opened before the schedule starts, as wrk2
 * opens its own, so no request pays for a connection's setup; more are opened as needed up to
 * `maxConnections`.
 */
export async function openLoop(
  baseUrl: string,
  w: Workload,
  ratePerSec: number,
  durationS: number,
  warmPath = '/healthz',
  maxConnections = 256,
): Promise<LoadResult> {
  const base = new URL(baseUrl);
  const agent = new Agent({ keepAlive: true, maxSockets: maxConnections });
  // Each of these requests finds no free connection and opens one, kept alive for the schedule.
  await Promise.all(Array.from({ length: OPENED_FIRST }, () => send(base, agent, { method: 'GET', path: warmPath })));
  const latency = new Recorder();
  const lag = new Recorder();
  const kinds = new Map<string, Recorder>();
  const codes: Record<string, number> = {};
  let errors = 0;
  let sent = 0;
  const total = Math.max(1, Math.round(ratePerSec * durationS));
  const intervalMs = 1000 / ratePerSec;
  const pending = new Set<Promise<void>>();
  const started = nowMs();
  await new Promise<void>((resolve) => {
    const tick = () => {
      const now = nowMs();
      // Every request whose time has come, in order; the timer wakes at most every millisecond.
      while (sent < total && started + sent * intervalMs <= now) {
        const due = started + sent * intervalMs;
        const u = sent % w.users;
        const r = w.next(u);
        sent++;
        lag.add(now - due);
        const p = send(base, agent, r).then((a) => {
          codes[a.status] = (codes[a.status] ?? 0) + 1;
          if (a.status < 200 || a.status > 299) errors++;
          const took = nowMs() - due;
          latency.add(took);
          if (r.kind !== undefined) {
            const k = kinds.get(r.kind) ?? new Recorder();
            kinds.set(r.kind, k);
            k.add(took);
          }
          w.seen?.(u, r, a);
          pending.delete(p);
        });
        pending.add(p);
      }
      if (sent < total) setTimeout(tick, Math.max(0, started + sent * intervalMs - nowMs()));
      else resolve();
    };
    tick();
  });
  await Promise.all(pending);
  const ended = nowMs();
  agent.destroy();
  const out = finish(started, Math.max(ended, started + durationS * 1000), sent, latency, codes, errors);
  const byKind = [...kinds]
    .map(([kind, rec]) => ({ kind, n: rec.n, ...rec.percentiles() }))
    .sort((a, b) => b.p99 - a.p99);
  const lagged = lag.percentiles();
  return { ...out, offeredPerSec: ratePerSec, sendLagP99: lagged.p99, sendLagMax: lagged.max, byKind };
}
