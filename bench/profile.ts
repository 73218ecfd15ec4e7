// Owns reading a V8 .cpuprofile (node --cpu-prof) into where the server's time went: self time by
// function and by package or source file, and inclusive time of the request path's cost centres.
import { readFile } from 'node:fs/promises';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}

interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  /** Microseconds on the monotonic clock, the same clock as process.hrtime in any process here. */
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** Monotonic microseconds, comparable with a .cpuprofile's timestamps. */
export const monotonicUs = (): number => Number(process.hrtime.bigint() / 1000n);

export interface Cost {
  name: string;
  ms: number;
  /** Share of the busy (non-idle) time. */
  share: number;
}

export interface ProfileSummary {
  file: string;
  wallMs: number;
  busyMs: number;
  topFunctions: Cost[];
  byArea: Cost[];
  centres: Cost[];
}

type Match = (f: CallFrame) => boolean;
const SQLITE_DRIVER = '/kysely/dist/esm/dialect/sqlite/sqlite-driver.js';
const inModule =
  (name: string): Match =>
  (f) =>
    f.url.includes(`/node_modules/${name}/`);

/**
 * Cost centres on the request path. The plugins' hooks are `leaf` (their own code only): a callback
 * hook calls the next one from its `done`, so everything after it would be on its stack. `stack` ones count a sample if any frame on its stack matches
 * (so they overlap). `leaf` ones count only samples whose innermost JavaScript frame matches:
 * better-sqlite3's native calls have no frame of their own, so SQLite's work shows as the self time
 * of the JavaScript function that called it.
 */
/** A source file of the API, as run from src/ (tsx) or from dist/ (the compiled server). */
const own =
  (...names: string[]): Match =>
  (f) =>
    names.some((n) => f.url.endsWith(`/src/${n}.ts`) || f.url.endsWith(`/dist/${n}.js`));
const ownDir =
  (dir: string): Match =>
  (f) =>
    f.url.includes(`/src/${dir}/`) || f.url.includes(`/dist/${dir}/`);

const CENTRES: [string, Match, 'stack' | 'leaf'][] = [
  ['gate hook: authenticate + rate limit (src/plugins/gate.ts)', own('plugins/gate'), 'leaf'],
  ['JWT verify (src/lib/jwt.ts)', own('lib/jwt'), 'stack'],
  ['API key check (src/modules/api-keys/authenticate.ts)', own('modules/api-keys/authenticate'), 'stack'],
  ['audit hook (src/plugins/audit.ts)', own('plugins/audit'), 'leaf'],
  ['metrics hook (src/plugins/metrics.ts)', own('plugins/metrics'), 'leaf'],
  ['prom-client', inModule('prom-client'), 'stack'],
  ['CORS (@fastify/cors)', inModule('@fastify/cors'), 'stack'],
  ['idempotency layer (src/plugins/idempotency.ts)', own('plugins/idempotency', 'lib/idempotency'), 'leaf'],
  ['request transaction (src/db/request-tx.ts)', own('db/request-tx'), 'leaf'],
  ['ETags (src/plugins/etags.ts, src/lib/etag.ts)', own('plugins/etags', 'lib/etag'), 'leaf'],
  ['input checks (src/plugins/input.ts)', own('plugins/input', 'lib/validation'), 'leaf'],
  ['Location header (src/plugins/location.ts)', own('plugins/location'), 'leaf'],
  ['settings read (src/modules/settings/repository.ts)', own('modules/settings/repository'), 'stack'],
  [
    'current stays + hotel today (src/modules/stays/current.ts, dates.ts)',
    own('modules/stays/current', 'modules/stays/dates'),
    'stack',
  ],
  ['report rollups (src/modules/reports)', ownDir('modules/reports'), 'stack'],
  ['message search index (src/modules/search)', ownDir('modules/search'), 'stack'],
  ['cursor + page (src/lib/pages.ts, src/db/paginate.ts)', own('lib/pages', 'db/paginate'), 'leaf'],
  ['Kysely + driver, all of it (build, compile, prepare, run)', inModule('kysely'), 'stack'],
  [
    'SQLite prepare: one statement compiled per query',
    (f) => f.functionName === 'prepare' && f.url.includes('/better-sqlite3/'),
    'stack',
  ],
  ["SQLite run: stmt.all/run in Kysely's sqlite driver", (f) => f.url.endsWith(SQLITE_DRIVER), 'leaf'],
  [
    'SQLite run: rows read by the store (src/db/store.ts readRows)',
    (f) => own('db/store')(f) && f.functionName === 'readRows',
    'leaf',
  ],
  ['pg driver + protocol', (f) => /\/node_modules\/(pg|pg-protocol|pg-pool)\//.test(f.url), 'stack'],
  ['ioredis (rate-limit counter)', inModule('ioredis'), 'stack'],
  ['route handlers + repositories (src/modules)', ownDir('modules'), 'stack'],
  ['response serialization (fast-json-stringify)', inModule('fast-json-stringify'), 'stack'],
  [
    'request validation (ajv-compiled code)',
    (f) => f.url.includes('/node_modules/ajv') || f.functionName === 'validate',
    'stack',
  ],
  ['logging (pino: child logger per request, level checks)', inModule('pino'), 'stack'],
  ['request id (crypto.randomUUID)', (f) => f.functionName === 'randomUUID', 'stack'],
  ['fastify core (routing, hooks, reply)', inModule('fastify'), 'stack'],
  ['node http + net + streams', (f) => /^node:(_http|net|internal\/(streams|http|net))/.test(f.url), 'stack'],
  ['garbage collector', (f) => f.functionName === '(garbage collector)', 'stack'],
];

function areaOf(f: CallFrame): string | null {
  const { url, functionName } = f;
  if (url === '') return functionName.startsWith('(') ? functionName : null;
  const nm = url.lastIndexOf('/node_modules/');
  if (nm >= 0) {
    const parts = url.slice(nm + '/node_modules/'.length).split('/');
    return parts[0]!.startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0]!;
  }
  const src = url.indexOf('/src/');
  if (src >= 0) return url.slice(src + 1);
  if (url.startsWith('node:')) {
    const rest = url.slice('node:'.length).replace(/^internal\//, '');
    return `node:${rest.split('/')[0]}`;
  }
  return url.replace(/^file:\/\//, '');
}

function top(map: Map<string, number>, busyMs: number, n: number): Cost[] {
  return [...map.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([name, ms]) => ({ name, ms, share: ms / busyMs }));
}

function where(f: CallFrame): string {
  const nm = f.url.lastIndexOf('/node_modules/');
  if (nm >= 0) return f.url.slice(nm + '/node_modules/'.length).replace('/dist/esm/', '/');
  return areaOf(f) ?? f.url;
}

/** Summarises the samples taken between `fromUs` and `toUs` (monotonic µs), e.g. the measured load only. */
export async function summariseProfile(
  file: string,
  window?: { fromUs: number; toUs: number },
  topN = 25,
): Promise<ProfileSummary> {
  const p = JSON.parse(await readFile(file, 'utf8')) as CpuProfile;
  const byId = new Map<number, ProfileNode>();
  const parent = new Map<number, number>();
  for (const n of p.nodes) byId.set(n.id, n);
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

  // A sample lasts until the next one is taken (how DevTools reads it); the last gets the mean.
  const mean = p.timeDeltas.reduce((a, b) => a + b, 0) / Math.max(1, p.timeDeltas.length);
  const selfUs = new Map<number, number>();
  let at = p.startTime;
  p.samples.forEach((id, i) => {
    at += p.timeDeltas[i] ?? 0;
    if (window && (at < window.fromUs || at > window.toUs)) return;
    const us = p.timeDeltas[i + 1] ?? mean;
    selfUs.set(id, (selfUs.get(id) ?? 0) + Math.max(0, us));
  });

  const stackOf = (id: number): CallFrame[] => {
    const frames: CallFrame[] = [];
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      frames.push(byId.get(cur)!.callFrame);
    }
    return frames;
  };

  let wallUs = 0;
  let idleUs = 0;
  const fn = new Map<string, number>();
  const area = new Map<string, number>();
  const centre = new Map<string, number>();
  for (const [id, us] of selfUs) {
    wallUs += us;
    const stack = stackOf(id);
    const leaf = stack[0]!;
    if (leaf.functionName === '(idle)') {
      idleUs += us;
      continue;
    }
    // A native leaf (a SQLite call, JSON.stringify) is named with its nearest JavaScript caller's area.
    const owner = stack.map(areaOf).find((a) => a !== null) ?? '(native)';
    const name =
      leaf.url === '' && !leaf.functionName.startsWith('(')
        ? `${leaf.functionName || '(anonymous)'} [native, from ${owner}]`
        : `${leaf.functionName || '(anonymous)'} ${where(leaf)}:${leaf.lineNumber + 1}`;
    fn.set(name, (fn.get(name) ?? 0) + us / 1000);
    area.set(owner, (area.get(owner) ?? 0) + us / 1000);
    const jsLeaf = stack.find((f) => f.url !== '');
    for (const [label, match, mode] of CENTRES) {
      const hit = mode === 'stack' ? stack.some(match) : jsLeaf !== undefined && match(jsLeaf);
      if (hit) centre.set(label, (centre.get(label) ?? 0) + us / 1000);
    }
  }
  const busyMs = (wallUs - idleUs) / 1000;
  return {
    file,
    wallMs: wallUs / 1000,
    busyMs,
    topFunctions: top(fn, busyMs, topN),
    byArea: top(area, busyMs, topN),
    centres: CENTRES.map(([label]) => ({
      name: label,
      ms: centre.get(label) ?? 0,
      share: (centre.get(label) ?? 0) / busyMs,
    })),
  };
}

/** `requests`: how many the window answered; each cost is then also shown per request (µs). */
export function formatProfile(s: ProfileSummary, requests?: number): string {
  const perRequest = (ms: number) =>
    requests === undefined || requests === 0 ? '' : `  ${((ms * 1000) / requests).toFixed(1).padStart(6)} µs/req`;
  const line = (c: Cost) =>
    `  ${(c.share * 100).toFixed(1).padStart(5)}%  ${c.ms.toFixed(0).padStart(7)} ms${perRequest(c.ms)}  ${c.name}`;
  return [
    `\nCPU profile ${s.file}`,
    `  busy ${s.busyMs.toFixed(0)} ms of ${s.wallMs.toFixed(0)} ms sampled (the rest idle); shares below are of busy time${
      requests === undefined ? '' : `; ${requests} requests, busy ${((s.busyMs * 1000) / requests).toFixed(1)} µs/req`
    }`,
    '\nCost centres (they overlap: a sample counts for every centre on its stack):',
    ...s.centres.filter((c) => c.ms > 0).map(line),
    '\nSelf time by package or source file (native calls charged to their caller):',
    ...s.byArea.map(line),
    '\nTop functions by self time:',
    ...s.topFunctions.map(line),
  ].join('\n');
}

// `node --import tsx bench/profile.ts RESULTS.json [SCENARIO]`: summarise again the profile a
// `--profile` run kept beside its results (its measured window and its request count).
if (process.argv[1]?.endsWith('bench/profile.ts') && process.argv[2] !== undefined) {
  const results = process.argv[2];
  const id = process.argv[3];
  type Run = { scenarios: { id: string; requests: number; window: { fromUs: number; toUs: number } }[] };
  const { runs } = JSON.parse(await readFile(results, 'utf8')) as { runs: Run[] };
  const scenario = runs.flatMap((r) => r.scenarios).find((x) => id === undefined || x.id === id);
  if (scenario === undefined) throw new Error(`no scenario ${id ?? ''} in ${results}`);
  const file = results.replace(/\.json$/, `-${scenario.id}.cpuprofile`);
  console.log(formatProfile(await summariseProfile(file, scenario.window, 40), scenario.requests));
}
