// Owns the live-stream fan-out figures (targets: docs/performance.md §3): N open GET /events/stream connections on a
// fresh store, then M writes at R per second; the deliveries made, the p50/p99 from each write's
// answer to each stream's arrival, and the servers' RSS (before the streams, idle with them open,
// peak), hence the memory per idle stream. SQLite: one instance. PostgreSQL + Redis: three
// instances on one database, the streams spread over them, the writes sent to the first.
// `npm run bench -- --streams` runs it as a section; alone: `npm run bench:streams -- [N] [M] [R] [--pg]`.
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { login } from './client.js';
import { parseOptions, type StoreKind } from './options.js';
import { cleanupAll, installSignalHandlers, isInterrupted } from './proc.js';
import { type RunningServer, startApiServer } from './servers.js';
import { createStore } from './stores.js';
import type { Verdict } from './targets.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const EMAIL = 'bench-streams@hotel.test';
const PASSWORD = 'bench streams password 0123456789';
const say = (text: string) => process.stdout.write(`${text}\n`);

/** Judged on one instance at 5,000 streams (docs/performance.md §3); other sizes and PostgreSQL are reported. */
export const FANOUT_TARGETS = { streams: 5000, messages: 100, rate: 20, p99Ms: 100, rssMiB: 200 } as const;
export const FANOUT_SIZES = [1000, 5000, 10_000] as const;
/** Descriptors the bench process needs besides the streams (stdio, logs, the store, the writes). */
const SPARE_FDS = 200;
/** The 1-minute load average under which a measurement is taken on a shared machine. */
export const QUIET_LOAD = 1.5;

export interface FanOutFigures {
  store: StoreKind;
  instances: number;
  streams: number;
  opened: number;
  messages: number;
  rate: number;
  deliveries: number;
  expected: number;
  p50Ms: number;
  p99Ms: number;
  /** Summed over the instances (MiB). */
  rssBeforeMiB: number;
  rssIdleMiB: number;
  /** The kernel's high-water mark, summed over the instances (MiB). */
  rssPeakMiB: number;
  kibPerStream: number;
  /** CPU per delivery made while the writes ran (µs): the servers' summed, and this client's. */
  serverUsPerDelivery: number;
  clientUsPerDelivery: number;
  loadBefore: number;
  loadAfter: number;
  /** Why the size was not measured (descriptors), or null. */
  skipped: string | null;
}

const NEEDLE = Buffer.from('"name":"bench-');
/** One read buffer for every stream: a read is scanned before the next one can land in it. */
const READ_BUFFER = Buffer.alloc(64 * 1024);
const FRAME_END = Buffer.from('\n\n');
const CHUNK_END = Buffer.from('\n\n\r\n');

/**
 * Opens one stream on a raw socket and records, for each `bench-<n>` event it receives, the time
 * it arrived in `arrivals[n]`. Not node:http: its response stream, a fresh buffer per read, string
 * decoding and a regular expression per read made this client cost more per delivery than the
 * server on the cores they share, so the figures measured the client as much as the fan-out.
 * Here every read lands in one reused buffer and is scanned as bytes; the chunk framing around
 * the frames does not matter to the scan, and a read that ends inside a frame keeps its end for
 * the next one.
 */
function openStream(baseUrl: string, token: string, arrivals: number[][], sockets: Socket[]): Promise<void> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise<void>((done, fail) => {
    let head: string | null = '';
    let tail: Buffer | null = null;
    const scan = (chunk: Buffer) => {
      const at = performance.now();
      const data = tail === null ? chunk : Buffer.concat([tail, chunk]);
      let from = 0;
      for (;;) {
        const k = data.indexOf(NEEDLE, from);
        if (k < 0) break;
        let n = 0;
        let j = k + NEEDLE.length;
        while (j < data.length && data[j]! >= 48 && data[j]! <= 57) n = n * 10 + data[j++]! - 48;
        if (j >= data.length) break;
        arrivals[n]?.push(at);
        from = j;
      }
      // A read that ends a frame leaves nothing to carry; otherwise what follows the last match
      // (copied: the read buffer is reused) is scanned again with the next read.
      const complete =
        data.subarray(data.length - CHUNK_END.length).equals(CHUNK_END) ||
        data.subarray(data.length - FRAME_END.length).equals(FRAME_END);
      tail = complete ? null : Buffer.from(data.subarray(from));
    };
    const onHead = (chunk: Buffer) => {
      head = (head ?? '') + chunk.toString('latin1');
      const endOfHead = head.indexOf('\r\n\r\n');
      if (endOfHead < 0) return;
      clearTimeout(timer);
      if (!head.startsWith('HTTP/1.1 200')) {
        socket.destroy();
        return fail(new Error(`stream: ${head.slice(0, head.indexOf('\r\n'))}`));
      }
      const rest = Buffer.from(head.slice(endOfHead + 4), 'latin1');
      head = null;
      if (rest.length > 0) scan(rest);
      done();
    };
    const socket = connect({
      host: hostname,
      port: Number(port),
      onread: {
        buffer: READ_BUFFER,
        callback: (nread: number, buffer: Uint8Array) => {
          const chunk = Buffer.from(buffer.buffer, buffer.byteOffset, nread);
          if (head !== null) onHead(chunk);
          else scan(chunk);
          return true;
        },
      },
    });
    sockets.push(socket);
    const timer = setTimeout(() => socket.destroy(new Error('stream: no answer within 30 s')), 30_000);
    socket.on('error', fail);
    socket.on('connect', () => {
      socket.write(`GET /api/v1/events/stream HTTP/1.1\r\nHost: ${hostname}\r\nAuthorization: Bearer ${token}\r\n\r\n`);
    });
  });
}

async function rss(pid: number): Promise<{ now: number; peak: number }> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? 0);
  return { now: kb('VmRSS') / 1024, peak: kb('VmHWM') / 1024 };
}

async function rssOf(servers: RunningServer[]): Promise<{ now: number; peak: number }> {
  const all = await Promise.all(servers.map((s) => rss(s.proc.pid)));
  return { now: all.reduce((n, r) => n + r.now, 0), peak: all.reduce((n, r) => n + r.peak, 0) };
}

/** CPU time a process has used so far (µs), from /proc/<pid>/stat (clock ticks of 10 ms). */
async function cpuUs(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}

async function cpuOf(servers: RunningServer[]): Promise<number> {
  return (await Promise.all(servers.map((s) => cpuUs(s.proc.pid)))).reduce((a, b) => a + b, 0);
}

function percentile(sorted: number[], p: number): number {
  return sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;
}

/** The soft limit on open files of this process (what the streams' client sockets count against). */
export async function openFilesLimit(): Promise<number> {
  const limits = await readFile('/proc/self/limits', 'utf8').catch(() => '');
  const m = /^Max open files\s+(\d+|unlimited)/m.exec(limits);
  return m === null || m[1] === 'unlimited' ? Number.POSITIVE_INFINITY : Number(m[1]);
}

/**
 * On a shared machine: polls the 1-minute load average every 30 s, up to `maxS`, until it is
 * under QUIET_LOAD. Returns the load average measured last.
 */
export async function waitForLoad(maxS: number): Promise<number> {
  const deadline = Date.now() + maxS * 1000;
  for (;;) {
    const load = loadavg()[0] ?? 0;
    if (load < QUIET_LOAD || Date.now() >= deadline || isInterrupted()) return load;
    say(
      `    load average ${load.toFixed(2)} ≥ ${QUIET_LOAD}: waiting (up to ${Math.round((deadline - Date.now()) / 1000)} s more)…`,
    );
    await sleep(Math.min(30_000, Math.max(0, deadline - Date.now())));
  }
}

export interface FanOutOptions {
  store: StoreKind;
  streams: number;
  messages: number;
  rate: number;
  pgBaseUrl: string;
  redisUrl: string;
  logDir: string;
  /** Seconds to wait for a quiet machine first (0: measure at once). */
  quietS: number;
}

export async function measureFanOut(o: FanOutOptions): Promise<FanOutFigures> {
  const instances = o.store === 'postgres' ? 3 : 1;
  const base: Omit<FanOutFigures, 'loadBefore' | 'loadAfter'> = {
    store: o.store,
    instances,
    streams: o.streams,
    opened: 0,
    messages: o.messages,
    rate: o.rate,
    deliveries: 0,
    expected: o.streams * o.messages,
    p50Ms: Number.NaN,
    p99Ms: Number.NaN,
    rssBeforeMiB: Number.NaN,
    rssIdleMiB: Number.NaN,
    rssPeakMiB: Number.NaN,
    kibPerStream: Number.NaN,
    serverUsPerDelivery: Number.NaN,
    clientUsPerDelivery: Number.NaN,
    skipped: null,
  };
  const limit = await openFilesLimit();
  if (o.streams + SPARE_FDS > limit) {
    const why = `needs ${o.streams + SPARE_FDS} open files, the limit is ${limit} (raise it: ulimit -n)`;
    const load = loadavg()[0] ?? 0;
    return { ...base, skipped: why, loadBefore: load, loadAfter: load };
  }

  const store = await createStore(o.store, o, o.logDir);
  const servers: RunningServer[] = [];
  const sockets: Socket[] = [];
  try {
    const env: NodeJS.ProcessEnv = {
      // One secret for the instances, so the token of the first opens streams on every one.
      JWT_SECRET: randomBytes(48).toString('base64url'),
      ADMIN_EMAIL: EMAIL,
      ADMIN_PASSWORD: PASSWORD,
      // One admin token opens every stream: the per-caller cap (default 10) is raised for the bench
      // only, to its highest accepted value; across instances it is counted in Redis.
      STREAMS_PER_CALLER: '10000',
      // Each instance holds its share of the streams, plus room for the writes and the store.
      MAX_CONNECTIONS: String(Math.ceil(o.streams / instances) + 1000),
    };
    // The first instance migrates the store and creates the admin; the others start on it after.
    // BENCH_STREAMS_CPU_PROF=<dir>: the first instance writes a CPU profile there when it stops.
    const profDir = process.env.BENCH_STREAMS_CPU_PROF;
    const nodeFlags = profDir ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : [];
    servers.push(await startApiServer(store, { cwd: ROOT, logDir: o.logDir, env, nodeFlags }));
    for (let i = 1; i < instances; i++) servers.push(await startApiServer(store, { cwd: ROOT, logDir: o.logDir, env }));
    const writer = servers[0]!.baseUrl;
    const token = await login(writer, EMAIL, PASSWORD);
    const headers = { authorization: `Bearer ${token}` };
    await sleep(500);

    const loadBefore = o.quietS > 0 ? await waitForLoad(o.quietS) : (loadavg()[0] ?? 0);
    const before = await rssOf(servers);
    const arrivals: number[][] = Array.from({ length: o.messages }, () => []);
    let opened = 0;
    // Opened in batches, so the servers' accept queues are not flooded (a refused connection would
    // show as a failed stream, not as a fan-out cost).
    const open = (i: number) =>
      openStream(servers[i % instances]!.baseUrl, token, arrivals, sockets).then(() => {
        opened++;
      });
    for (let i = 0; i < o.streams; i += 500) {
      await Promise.all(Array.from({ length: Math.min(500, o.streams - i) }, (_, k) => open(i + k)));
    }
    await sleep(2000);
    const idle = await rssOf(servers);

    const answered: number[] = [];
    const post = (i: number) =>
      new Promise<void>((done, fail) => {
        const req = request(
          `${writer}/api/v1/guests`,
          { method: 'POST', headers: { ...headers, 'content-type': 'application/json' } },
          (res) => {
            res.resume();
            res.on('end', () => {
              answered[i] = performance.now();
              res.statusCode === 201 ? done() : fail(new Error(`POST: ${res.statusCode}`));
            });
          },
        );
        req.setTimeout(30_000, () => req.destroy(new Error('POST: no answer within 30 s')));
        req.on('error', fail);
        req.end(JSON.stringify({ name: `bench-${i}` }));
      });
    const posts: Promise<void>[] = [];
    const serverCpu0 = await cpuOf(servers);
    const clientCpu0 = process.cpuUsage();
    const started = performance.now();
    for (let i = 0; i < o.messages; i++) {
      const wait = started + (i * 1000) / o.rate - performance.now();
      if (wait > 0) await sleep(wait);
      posts.push(post(i));
    }
    await Promise.all(posts);
    const expected = o.streams * o.messages;
    const made = () => arrivals.reduce((n, a) => n + a.length, 0);
    // The last deliveries: at most 10 s more.
    const deadline = performance.now() + 10_000;
    while (made() < expected && performance.now() < deadline) await sleep(50);
    const serverCpu = (await cpuOf(servers)) - serverCpu0;
    const clientCpu = process.cpuUsage(clientCpu0);
    const latencies = arrivals.flatMap((a, i) => a.map((at) => Math.max(0, at - answered[i]!))).sort((x, y) => x - y);
    const end = await rssOf(servers);
    return {
      ...base,
      opened,
      deliveries: made(),
      p50Ms: percentile(latencies, 0.5),
      p99Ms: percentile(latencies, 0.99),
      rssBeforeMiB: before.now,
      rssIdleMiB: idle.now,
      rssPeakMiB: end.peak,
      kibPerStream: ((idle.now - before.now) * 1024) / Math.max(1, opened),
      serverUsPerDelivery: serverCpu / Math.max(1, made()),
      clientUsPerDelivery: (clientCpu.user + clientCpu.system) / Math.max(1, made()),
      loadBefore,
      loadAfter: loadavg()[0] ?? 0,
    };
  } finally {
    for (const socket of sockets) socket.destroy();
    for (const s of servers.reverse()) await s.stop();
    await store.drop();
  }
}

const f1 = (n: number) => (Number.isNaN(n) ? '-' : n.toFixed(1));
const f0 = (n: number) => (Number.isNaN(n) ? '-' : n.toFixed(0));

export function formatFanOut(rows: FanOutFigures[]): string {
  const head =
    'store                  streams  deliveries          p50 ms  p99 ms  RSS before  idle  peak MiB  KiB/stream  µs/deliv srv cli  load before/after';
  const lines = ["\nLive-stream fan-out: N streams × M messages at R/s, latency from the POST's answer", head];
  for (const r of rows) {
    const name = r.instances === 1 ? `${r.store}, 1 instance` : `${r.store}+redis, ${r.instances} inst.`;
    if (r.skipped !== null) {
      lines.push(`${name.padEnd(22)} ${String(r.streams).padStart(7)}  skipped: ${r.skipped}`);
      continue;
    }
    lines.push(
      [
        name.padEnd(22),
        String(r.streams).padStart(7),
        ` ${`${r.deliveries}/${r.expected}`.padEnd(18)}`,
        f1(r.p50Ms).padStart(7),
        f1(r.p99Ms).padStart(7),
        f0(r.rssBeforeMiB).padStart(11),
        f0(r.rssIdleMiB).padStart(5),
        f0(r.rssPeakMiB).padStart(9),
        f1(r.kibPerStream).padStart(11),
        `${f1(r.serverUsPerDelivery).padStart(9)} ${f1(r.clientUsPerDelivery).padStart(4)}`,
        `  ${r.loadBefore.toFixed(2)} / ${r.loadAfter.toFixed(2)}`,
      ].join(' '),
    );
  }
  const msgs = rows[0] === undefined ? '' : ` (${rows[0].messages} messages at ${rows[0].rate}/s)`;
  lines.push(
    `RSS summed over the instances; KiB/stream = (idle − before) ÷ streams; µs/deliv: CPU per delivery while` +
      ` the writes ran, the servers' (srv) and this client's (cli)${msgs}.`,
  );
  return lines.join('\n');
}

export function judgeFanOut(rows: FanOutFigures[]): Verdict[] {
  const out: Verdict[] = [];
  const t = FANOUT_TARGETS;
  for (const r of rows) {
    const scope = `${r.store}${r.instances > 1 ? `+redis ×${r.instances}` : ''} ${r.streams} streams`;
    if (r.skipped !== null) {
      out.push({ target: 'stream fan-out measured', scope, measured: r.skipped, pass: false });
      continue;
    }
    // Judged: one instance at the target's size. Other sizes and the cluster: reported.
    const judged = r.instances === 1 && r.streams === t.streams && r.messages === t.messages && r.rate === t.rate;
    out.push({
      target: 'stream fan-out: every delivery made',
      scope,
      measured: `${r.deliveries}/${r.expected} (${r.opened}/${r.streams} streams open)`,
      pass: r.deliveries === r.expected && r.opened === r.streams,
    });
    out.push({
      target: `stream fan-out p99 ≤ ${t.p99Ms} ms from the POST's answer`,
      scope,
      measured: `p99 ${f1(r.p99Ms)} ms, p50 ${f1(r.p50Ms)} ms (load ${r.loadBefore.toFixed(2)} → ${r.loadAfter.toFixed(2)})`,
      pass: judged ? r.p99Ms <= t.p99Ms : null,
    });
    out.push({
      target: `stream fan-out RSS ≤ ${t.rssMiB} MiB`,
      scope,
      measured: `peak ${f0(r.rssPeakMiB)} MiB, idle with streams ${f0(r.rssIdleMiB)} MiB, ${f1(r.kibPerStream)} KiB per idle stream`,
      pass: judged ? r.rssPeakMiB <= t.rssMiB : null,
    });
  }
  return out;
}

/** The section of `npm run bench -- --streams`: each size on each store, one after another. */
export async function runFanOut(
  stores: StoreKind[],
  o: { pgBaseUrl: string; redisUrl: string; quietS: number; streamSizes: number[] },
  logDir: string,
): Promise<FanOutFigures[]> {
  const rows: FanOutFigures[] = [];
  for (const store of stores) {
    for (const streams of o.streamSizes) {
      if (isInterrupted()) return rows;
      say(
        `  fan-out: ${store}, ${streams} streams × ${FANOUT_TARGETS.messages} messages at ${FANOUT_TARGETS.rate}/s …`,
      );
      const r = await measureFanOut({
        store,
        streams,
        messages: FANOUT_TARGETS.messages,
        rate: FANOUT_TARGETS.rate,
        pgBaseUrl: o.pgBaseUrl,
        redisUrl: o.redisUrl,
        logDir,
        quietS: o.quietS,
      });
      rows.push(r);
      say(formatFanOut([r]).split('\n').slice(-2, -1).join(''));
    }
  }
  return rows;
}

// Alone: npm run bench:streams -- [streams=1000] [messages=100] [rate=20] [--pg] [--wait-quiet S]
if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  // Numbers not after an option that takes a value are the positional streams, messages, rate.
  const valued = (a: string | undefined) => a?.startsWith('--') === true && a !== '--pg' && a !== '--pg-only';
  const numbers = args.filter((a, i) => /^\d+$/.test(a) && !valued(args[i - 1])).map(Number);
  const rest = args.filter((a, i) => !/^\d+$/.test(a) || valued(args[i - 1]));
  const [streams = 1000, messages = 100, rate = 20] = numbers;
  installSignalHandlers();
  (async () => {
    const parsed = parseOptions(rest.filter((a) => a !== '--streams'));
    if (parsed === 'help') return;
    const tmp = await mkdtemp(join(tmpdir(), 'gma-bench-streams-'));
    const store: StoreKind = parsed.stores.includes('postgres') ? 'postgres' : 'sqlite';
    const r = await measureFanOut({
      store,
      streams,
      messages,
      rate,
      pgBaseUrl: parsed.pgBaseUrl,
      redisUrl: parsed.redisUrl,
      logDir: tmp,
      quietS: parsed.quietS,
    });
    say(formatFanOut([r]));
    await rm(tmp, { recursive: true, force: true });
  })()
    .catch((err: unknown) => {
      process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
      process.exitCode = 1;
    })
    .finally(() => cleanupAll());
}
