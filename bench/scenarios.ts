// Owns what is sent under load: the scenarios (the target endpoints, two diagnostics that
// split the request path, the 80/20 mix) and running one with autocannon after a warm-up.
import autocannon, { type AutocannonRequest, type AutocannonResult, type Instance } from 'autocannon';
import { type Probe, settle, type Targets } from './client.js';
import type { StoreKind } from './options.js';
import { monotonicUs } from './profile.js';
import { startSampler, waitForQuiet } from './sampler.js';
import { type SendsBacklog, sendsBacklog } from './sends.js';

const API = '/api/v1';
const POST_BODY = JSON.stringify({ content: 'Benchmark: your room is ready, enjoy your stay.' });
const GUEST_PATCH = JSON.stringify({ notes: 'Benchmark: prefers a quiet room away from the lift' });

export type ScenarioKind = 'ceiling' | 'target' | 'diagnostic';

export interface Scenario {
  id: string;
  label: string;
  kind: ScenarioKind;
  requests: AutocannonRequest[];
  /** Checked once before the load so a scenario never measures error answers. */
  probes: Probe[];
  /** Whether it POSTs texts a channel sends (the bench then follows their sends). */
  sendsTexts?: boolean;
}

export interface ScenarioResult {
  id: string;
  label: string;
  kind: ScenarioKind;
  durationS: number;
  requests: number;
  reqPerSec: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  mean: number;
  /** Non-2xx answers plus socket errors and timeouts. */
  errors: number;
  non2xx: number;
  socketErrors: number;
  statusCodes: Record<string, number>;
  peakRssMiB: number;
  serverCores: number | null;
  loadCores: number;
  storeCores: number | null;
  otherCores: number | null;
  machineBusy: number | null;
  loadAverage: number;
  /** Server CPU per answered request, in µs: robust to how much CPU the machine had to spare. */
  serverUsPerRequest: number | null;
  /** Seconds the server needed, before this scenario, to work off the previous one's backlog. */
  settledS: number;
  /** The measured phase (and the sending of its texts) on the monotonic clock (µs), to cut a CPU profile down to it. */
  window: { fromUs: number; toUs: number };
  /** For a scenario that POSTs texts: the sends still pending when it stopped, and their drain. */
  sends?: SendsBacklog;
  /**
   * The requests over the time until every text they queued had been sent (the measured phase and
   * the drain after it): the rate the server sustains with its sends, where `reqPerSec` lets the
   * dispatcher fall behind.
   */
  sentPerSec?: number;
}

export interface LoadSettings {
  connections: number;
  durationS: number;
  warmupS: number;
  /** Longest wait for an idle machine before the scenario (0: do not wait). */
  quietS: number;
}

/** Cycles through the ids so reads and writes spread over many conversations, as real traffic does. */
function roundRobin(ids: string[], make: (id: string) => string): AutocannonRequest['setupRequest'] {
  let i = 0;
  return (req) => ({ ...req, path: make(ids[i++ % ids.length]!) });
}

export function ceilingScenario(): Scenario {
  return {
    id: 'ceiling',
    label: 'bare Fastify GET /',
    kind: 'ceiling',
    requests: [{ method: 'GET', path: '/' }],
    probes: [],
  };
}

/**
 * The conversation list's floor on this stack (bench/ceiling-server.ts with FLOOR_SQLITE or
 * FLOOR_PG): the API's own first-page statement on better-sqlite3 or pg in a bare Fastify route,
 * no auth or hooks; on SQLite also the same page with SQLite writing the JSON.
 */
export function floorScenarios(kind: StoreKind): Scenario[] {
  const floor = (id: string, label: string, path: string): Scenario => ({
    id,
    label,
    kind: 'diagnostic',
    requests: [{ method: 'GET', path }],
    probes: [],
  });
  const lean = floor(
    'floor.list',
    "floor: the list's statement in bare Fastify, no auth",
    '/floor?status=open&limit=20',
  );
  if (kind === 'postgres') return [lean];
  return [
    lean,
    floor('floor.list-json', 'floor: the same, SQLite writes the JSON', '/floor-json?status=open&limit=20'),
  ];
}

export function apiScenarios(token: string, t: Targets): Scenario[] {
  const auth = { authorization: `Bearer ${token}` };
  const json = { ...auth, 'content-type': 'application/json' };
  const listPath = `${API}/conversations?status=open&limit=20`;
  const searchPath = `${API}/guests?search=${encodeURIComponent(t.guestSearch)}`;
  const messagesOf = (id: string) => `${API}/conversations/${id}/messages`;
  const first = messagesOf(t.conversationIds[0]!);

  const list: AutocannonRequest = { method: 'GET', path: listPath, headers: auth };
  const search: AutocannonRequest = { method: 'GET', path: searchPath, headers: auth };
  const readMessages = (): AutocannonRequest => ({
    method: 'GET',
    path: first,
    headers: auth,
    setupRequest: roundRobin(t.conversationIds, messagesOf),
  });
  const post = (): AutocannonRequest => ({
    method: 'POST',
    path: messagesOf(t.postIds[0]!),
    headers: json,
    body: POST_BODY,
    setupRequest: roundRobin(t.postIds, messagesOf),
  });

  const guestOf = (id: string) => `${API}/guests/${id}`;
  const patchGuest = (): AutocannonRequest => ({
    method: 'PATCH',
    path: guestOf(t.guestIds[0]!),
    headers: json,
    body: GUEST_PATCH,
    setupRequest: roundRobin(t.guestIds, guestOf),
  });

  const probeList = (path: string): Probe => ({ method: 'GET', path, list: true });
  const probePost: Probe = { method: 'POST', path: messagesOf(t.postIds[0]!), body: POST_BODY, list: false };
  return [
    {
      id: 'healthz',
      label: 'GET /healthz (no auth, no store)',
      kind: 'diagnostic',
      requests: [{ method: 'GET', path: '/healthz' }],
      probes: [],
    },
    {
      id: 'auth.me',
      label: 'GET /auth/me (auth only)',
      kind: 'diagnostic',
      requests: [{ method: 'GET', path: `${API}/auth/me`, headers: auth }],
      probes: [{ method: 'GET', path: `${API}/auth/me`, list: false }],
    },
    {
      id: 'conversations.list',
      label: 'GET /conversations?status=open&limit=20',
      kind: 'target',
      requests: [list],
      probes: [probeList(listPath)],
    },
    {
      id: 'guests.search',
      label: `GET /guests?search=${t.guestSearch}`,
      kind: 'target',
      requests: [search],
      probes: [probeList(searchPath)],
    },
    {
      id: 'messages.list',
      label: 'GET /conversations/:id/messages',
      kind: 'target',
      requests: [readMessages()],
      probes: [probeList(first)],
    },
    // Writes come last so every read above saw the seeded data as it was.
    {
      id: 'messages.post',
      label: 'POST /conversations/:id/messages',
      kind: 'target',
      requests: [post()],
      probes: [probePost],
      sendsTexts: true,
    },
    {
      id: 'guests.patch',
      label: 'PATCH /guests/:id (notes)',
      kind: 'diagnostic',
      requests: [patchGuest()],
      probes: [],
    },
    {
      // Each connection cycles through these five: four reads, one write.
      id: 'mix.80-20',
      label: 'mix 80% reads / 20% POST messages',
      kind: 'target',
      // Copies: autocannon caches the built request on the object, so scenarios do not share them.
      requests: [{ ...list }, readMessages(), { ...search }, { ...list }, post()],
      probes: [],
      sendsTexts: true,
    },
  ];
}

/** A latency for the tables and verdicts: ms with one decimal. */
export const ms = (v: number): string => v.toFixed(1);

/** Latency percentiles in ms at microsecond resolution. */
interface Latency {
  p50: number;
  p90: number;
  p99: number;
  max: number;
  mean: number;
}

/**
 * Each 2xx answer's latency as autocannon's client timed it (`process.hrtime`, fractional ms). Its
 * own histogram keeps whole milliseconds only, too coarse here: a p50 of 1.9 ms read as 1, one of
 * 2.1 ms as 2, so the 1M / 10k p50 ratio could read 2.00 × for two nearly equal figures, and a p99
 * anywhere in [10, 11) read as 10.
 */
function latencyRecorder(instance: Instance): () => Latency | null {
  let values = new Float64Array(1 << 16);
  let n = 0;
  instance.on('response', (_client: unknown, status: number, _bytes: number, elapsedMs: number) => {
    if (status < 200 || status > 299) return;
    if (n === values.length) {
      const grown = new Float64Array(values.length * 2);
      grown.set(values);
      values = grown;
    }
    values[n++] = elapsedMs;
  });
  return () => {
    if (n === 0) return null;
    const sorted = values.subarray(0, n).sort();
    // Nearest rank, as HdrHistogram reads a percentile.
    const at = (q: number) => sorted[Math.min(n - 1, Math.max(0, Math.ceil((q / 100) * n) - 1))]!;
    let sum = 0;
    for (let i = 0; i < n; i++) sum += sorted[i]!;
    return { p50: at(50), p90: at(90), p99: at(99), max: sorted[n - 1]!, mean: sum / n };
  };
}

async function fire(
  url: string,
  s: Scenario,
  load: LoadSettings,
  durationS: number,
): Promise<{ result: AutocannonResult; latency: () => Latency | null }> {
  const instance = autocannon({
    url,
    connections: load.connections,
    duration: durationS,
    pipelining: 1,
    timeout: 10,
    requests: s.requests,
    title: s.id,
  });
  // Read only when wanted: a warm-up's answers are recorded alike but never sorted.
  const latency = latencyRecorder(instance);
  return { result: await instance, latency };
}

export async function runScenario(
  baseUrl: string,
  s: Scenario,
  load: LoadSettings,
  serverPid: number,
  store: { pgDatabase: string | null; databaseUrl: string } | null = null,
): Promise<ScenarioResult> {
  const settledS = s.kind === 'ceiling' ? 0 : await settle(baseUrl);
  if (load.quietS > 0) await waitForQuiet(load.quietS);
  if (load.warmupS > 0) await fire(baseUrl, s, load, load.warmupS);
  // The warm-up's texts are sent before the measured phase, so what is left pending after it (and
  // the time it takes to send) is the measured phase's own.
  if (s.sendsTexts && store !== null) await sendsBacklog(store.databaseUrl);
  const storeDatabase = store?.pgDatabase ?? null;
  const sampler = startSampler(serverPid, storeDatabase);
  const fromUs = monotonicUs();
  const fired = await fire(baseUrl, s, load, load.durationS);
  const r = fired.result;
  const latency = fired.latency();
  const toUs = monotonicUs();
  const sample = await sampler.stop();
  const sends = s.sendsTexts && store !== null ? await sendsBacklog(store.databaseUrl) : undefined;
  const statusCodes: Record<string, number> = {};
  for (const [code, v] of Object.entries(r.statusCodeStats)) statusCodes[code] = v.count;
  const requests = r['1xx'] + r['2xx'] + r['3xx'] + r['4xx'] + r['5xx'];
  return {
    id: s.id,
    label: s.label,
    kind: s.kind,
    durationS: r.duration,
    requests,
    reqPerSec: requests / r.duration,
    // No 2xx answer at all: nothing to time (the targets fail such a scenario on its requests).
    p50: latency?.p50 ?? 0,
    p90: latency?.p90 ?? 0,
    p99: latency?.p99 ?? 0,
    max: latency?.max ?? 0,
    mean: latency?.mean ?? 0,
    errors: r.non2xx + r.errors,
    non2xx: r.non2xx,
    socketErrors: r.errors,
    statusCodes,
    ...sample,
    serverUsPerRequest:
      sample.serverCores === null || requests === 0 ? null : (sample.serverCores * 1e6) / (requests / r.duration),
    settledS,
    // A profile of a scenario that sends covers the sends too: the cost the server sustains.
    window: { fromUs, toUs: sends === undefined ? toUs : monotonicUs() },
    sends,
    sentPerSec: sends === undefined || sends.drainS === null ? undefined : requests / (r.duration + sends.drainS),
  };
}
