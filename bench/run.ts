// Owns the benchmark run end to end (`npm run bench`): the ceiling, then per data size and store:
// seed, start the real server, find ids, load each scenario, report, judge the targets, clean up.
import { copyFile, mkdir, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { DEMO_PASSWORD } from '../src/cli/seed-data.js';
import { discover, login, probe } from './client.js';
import { ensureHotConversation } from './hot.js';
import type { LoopFigures } from './loops.js';
import { machine } from './machine.js';
import { type BenchOptions, type DataSize, parseOptions, type StoreKind, USAGE } from './options.js';
import { cleanupAll, installSignalHandlers, isInterrupted, onCleanup } from './proc.js';
import { formatProfile, monotonicUs, summariseProfile } from './profile.js';
import { formatMachine, formatRun, formatTable, formatVerdicts, type RunReport, writeResults } from './report.js';
import { highWaterMiB, rssNowMiB } from './sampler.js';
import { apiScenarios, ceilingScenario, floorScenarios, ms, runScenario, type ScenarioResult } from './scenarios.js';
import { ceilingLoops, runSections } from './sections.js';
import { startApiServer, startCeilingServer } from './servers.js';
import { formatSqlCosts, sqlCosts } from './sql-costs.js';
import { adoptStore, type BenchStore, createStore, seedStore, storeSize } from './stores.js';
import { type FanOutFigures, formatFanOut, judgeFanOut, runFanOut } from './streams.js';
import { judge, type StoreRun } from './targets.js';
import { judgeLists } from './targets-lists.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const RESULTS = join(ROOT, 'bench', 'results');
const say = (text: string) => process.stdout.write(`${text}\n`);

async function pgQuery(url: string, text: string): Promise<string> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  await client.connect();
  try {
    const r = await client.query<Record<string, string>>(text);
    return Object.values(r.rows[0] ?? {})[0] ?? '';
  } finally {
    await client.end();
  }
}

async function durability(store: BenchStore): Promise<string> {
  if (store.kind === 'sqlite') return 'SQLite WAL, synchronous=FULL';
  const commit = await pgQuery(store.databaseUrl, 'show synchronous_commit');
  const fsync = await pgQuery(store.databaseUrl, 'show fsync');
  return `PostgreSQL synchronous_commit=${commit}, fsync=${fsync}`;
}

/** Echoes the seed command's progress bar now and then, so a long seed is visibly alive. */
function watchSeed(logPath: string): () => void {
  const started = Date.now();
  const timer = setInterval(async () => {
    const text = await readFile(logPath, 'utf8').catch(() => '');
    const last =
      text
        .split(/[\r\n]+/)
        .filter((l) => l.trim() !== '')
        .at(-1) ?? '';
    say(`    … ${Math.round((Date.now() - started) / 1000)} s  ${last.trim()}`);
  }, 30_000);
  return () => clearInterval(timer);
}

async function benchStore(
  kind: StoreKind,
  seededSize: DataSize,
  o: BenchOptions,
  tmp: string,
  ceiling: ScenarioResult,
  ceilingLoop: LoopFigures[],
): Promise<{
  run: StoreRun;
  profileDir: string | null;
  window: ScenarioResult['window'] | null;
  requests?: number;
}> {
  let size = seededSize;
  const adopt = (kind === 'sqlite' && o.sqliteFile !== null) || (kind === 'postgres' && o.pgDatabase !== null);
  const store = adopt ? await adoptStore(kind, o, tmp) : await createStore(kind, o, tmp);
  let seed: { seconds: number; adminEmail: string; adminPassword: string };
  if (store.seeded) {
    size = await storeSize(store);
    say(`\n[${kind} ${size.label}] using the seeded store ${o.sqliteFile ?? o.pgDatabase}`);
    seed = { seconds: 0, adminEmail: 'admin@demo.hotel', adminPassword: DEMO_PASSWORD };
  } else {
    const seedLog = join(tmp, `seed-${kind}-${size.label}.log`);
    say(`\n[${kind} ${size.label}] seeding ${size.conversations.toLocaleString('en-US')} conversations…`);
    const unwatch = watchSeed(seedLog);
    seed = await seedStore(store, size, ROOT, seedLog).finally(unwatch);
  }
  const hot = o.sections.includes('depth') && !o.profile && !o.profileMix;
  const hotConversationId = hot ? await ensureHotConversation(store.databaseUrl, o.hotMessages) : null;
  const settleStart = performance.now();
  await store.settle();
  const settleS = (performance.now() - settleStart) / 1000;
  const settled = kind === 'postgres' ? ` (then vacuum analyze, ${settleS.toFixed(1)} s)` : '';
  say(`[${kind} ${size.label}] seeded in ${seed.seconds.toFixed(1)} s${settled}; starting the API server`);
  const durable = await durability(store);

  const profileDir = o.profile || o.profileMix ? join(tmp, `profile-${kind}-${size.label}`) : null;
  const nodeFlags = profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [];
  const server = await startApiServer(store, { cwd: ROOT, logDir: tmp, nodeFlags });
  const token = await login(server.baseUrl, seed.adminEmail, seed.adminPassword);
  const targets = await discover(server.baseUrl, token);
  const idleRss = await rssNowMiB(server.proc.pid);
  let scenarios = o.sections.includes('scenarios') && !o.profileMix ? apiScenarios(token, targets) : [];
  if (o.profile) scenarios = scenarios.filter((s) => s.id === o.profileScenario);
  else if (o.scenarioIds !== null) {
    const unknown = o.scenarioIds.filter((id) => !scenarios.some((s) => s.id === id));
    if (unknown.length > 0) throw new Error(`--scenario: no scenario "${unknown.join('", "')}"`);
    scenarios = scenarios.filter((s) => o.scenarioIds!.includes(s.id));
  }
  if (o.profile && scenarios.length === 0) throw new Error(`--profile-scenario: no scenario "${o.profileScenario}"`);

  const results: ScenarioResult[] = [];
  for (const s of scenarios) {
    if (isInterrupted()) break;
    for (const p of s.probes) await probe(server.baseUrl, token, p);
    process.stdout.write(`  ${s.label} … `);
    const r = await runScenario(server.baseUrl, s, o, server.proc.pid, store);
    results.push(r);
    const backlog = r.settledS >= 1 ? ` (waited ${r.settledS.toFixed(0)} s for the previous backlog first)` : '';
    say(`${Math.round(r.reqPerSec)} req/s, p50 ${ms(r.p50)} ms, p99 ${ms(r.p99)} ms, errors ${r.errors}${backlog}`);
    if (r.sends !== undefined) {
      const { left, drainS } = r.sends;
      const drained =
        drainS === null
          ? 'not all sent 180 s later'
          : `all sent ${drainS.toFixed(1)} s later: ${Math.round(r.sentPerSec!)} req/s with their sends`;
      say(`    texts left to send when the load stopped: ${left} (${drained})`);
    }
  }
  const fromUs = monotonicUs();
  const sections = await runSections(o, {
    baseUrl: server.baseUrl,
    server: server.proc,
    token,
    password: seed.adminPassword,
    databaseUrl: store.databaseUrl,
    hotConversationId,
    ceilingClosed: ceilingLoop[0]?.closed.reqPerSec ?? null,
    twinDirs: { cwd: ROOT, logDir: tmp },
  });
  const sectionsWindow = { fromUs, toUs: monotonicUs() };
  const hwm = await highWaterMiB(server.proc.pid);
  const exit = await server.stop();
  if (exit !== 0) say(`  (the API server exited with ${exit}; last log lines:\n${server.proc.logTail(10)})`);
  // The list's floor on the same file, the API stopped: what no server on this stack can beat.
  if (!o.profile && results.some((r) => r.id === 'conversations.list')) {
    const env =
      kind === 'sqlite' ? { FLOOR_SQLITE: store.databaseUrl.slice('sqlite:'.length) } : { FLOOR_PG: store.databaseUrl };
    const floor = await startCeilingServer({ cwd: ROOT, logDir: tmp, env });
    for (const s of floorScenarios(kind)) {
      if (isInterrupted()) break;
      process.stdout.write(`  ${s.label} … `);
      const r = await runScenario(floor.baseUrl, s, o, floor.proc.pid, store);
      results.push(r);
      say(`${Math.round(r.reqPerSec)} req/s, p50 ${ms(r.p50)} ms, p99 ${ms(r.p99)} ms, errors ${r.errors}`);
    }
    await floor.stop();
  }
  const twin = sections.twin;
  // A diagnostic: if the query code it borrows has moved on, the measured figures still stand.
  const costs =
    kind === 'sqlite'
      ? await sqlCosts(
          store.databaseUrl.slice('sqlite:'.length),
          targets.conversationIds[0]!,
          targets.guestSearch,
        ).catch((err: unknown) => {
          say(`  (SQL timings skipped: ${err instanceof Error ? err.message : String(err)})`);
          return undefined;
        })
      : undefined;
  await store.drop();
  const run: StoreRun = {
    store: kind,
    size,
    seedSeconds: seed.seconds,
    vacuumSeconds: kind === 'postgres' ? settleS : null,
    durability: durable,
    scenarios: results,
    peakRssMiB: Math.max(0, ...results.map((r) => r.peakRssMiB)),
    idleRssMiB: idleRss,
    rssHighWaterMiB: hwm,
    sqlCosts: costs,
    depth: sections.depth,
    loops: twin ? [...sections.loops, twin.loops] : sections.loops,
    twin: twin && { alone: twin.alone, offsetMs: twin.offsetMs, rounds: twin.rounds },
    ceilingLoops: ceilingLoop,
  };
  say(formatRun(run, ceiling));
  if (costs) say(formatSqlCosts(costs));
  return {
    run,
    profileDir,
    window: o.profileMix ? sectionsWindow : (results[0]?.window ?? null),
    requests: o.profileMix ? undefined : results[0]?.requests,
  };
}

async function measureCeiling(o: BenchOptions, tmp: string): Promise<{ r: ScenarioResult; loops: LoopFigures[] }> {
  say('Ceiling: bare Fastify GET / …');
  const server = await startCeilingServer({ cwd: ROOT, logDir: tmp });
  const r = await runScenario(server.baseUrl, ceilingScenario(), o, server.proc.pid);
  say(formatTable([r], r.reqPerSec));
  const open = o.sections.includes('loops') || o.sections.includes('mix');
  const loops = open && !o.profile ? await ceilingLoops(server.baseUrl, o) : [];
  await server.stop();
  return { r, loops };
}

async function reportProfile(
  profileDir: string,
  stamp: string,
  window: ScenarioResult['window'] | null,
  name: string,
  requests?: number,
): Promise<void> {
  const files = (await readdir(profileDir)).filter((f) => f.endsWith('.cpuprofile'));
  if (files.length === 0) {
    say('No CPU profile was written (the server did not exit cleanly).');
    return;
  }
  await mkdir(RESULTS, { recursive: true });
  const kept = join(RESULTS, `${stamp}-${name}.cpuprofile`);
  await copyFile(join(profileDir, files[0]!), kept);
  // Only the measured load: start-up (module loading, tsx) and the warm-up would blur the request path.
  say(formatProfile(await summariseProfile(kept, window ?? undefined), requests));
}

/** `--only streams` measures no ceiling: an empty row stands in the report. */
function emptyCeiling(): ScenarioResult {
  return {
    id: 'ceiling',
    label: 'not measured (--only streams)',
    kind: 'diagnostic',
    durationS: 0,
    requests: 0,
    reqPerSec: 0,
    p50: 0,
    p90: 0,
    p99: 0,
    max: 0,
    mean: 0,
    errors: 0,
    non2xx: 0,
    socketErrors: 0,
    statusCodes: {},
    peakRssMiB: 0,
    serverCores: null,
    loadCores: 0,
    storeCores: null,
    otherCores: null,
    machineBusy: null,
    loadAverage: 0,
    serverUsPerRequest: null,
    settledS: 0,
    window: { fromUs: 0, toUs: 0 },
  };
}

async function main(): Promise<void> {
  const parsed = parseOptions(process.argv.slice(2));
  if (parsed === 'help') {
    process.stdout.write(USAGE);
    return;
  }
  const o = parsed;
  installSignalHandlers();
  const startedAt = new Date().toISOString();
  const tmp = await mkdtemp(join(tmpdir(), 'guest-api-bench-'));
  let ok = false;
  onCleanup(`remove ${tmp}`, async () => {
    // Logs are kept when the run failed, for the error's context; the stores are gone either way.
    if (ok) await rm(tmp, { recursive: true, force: true });
    else say(`Logs kept in ${tmp}`);
  });

  const m = await machine(tmp);
  if (o.stores.includes('postgres')) {
    m.postgres = `PostgreSQL ${await pgQuery(`${o.pgBaseUrl}/postgres`, 'show server_version')}`;
  }
  say(formatMachine(m, o));

  // `--only streams`: the fan-out alone, on its own fresh stores (no ceiling, no seeding).
  const streamsOnly = o.sections.length === 1 && o.sections[0] === 'streams';
  const { r: ceiling, loops: ceilingLoop } = streamsOnly
    ? { r: emptyCeiling(), loops: [] }
    : await measureCeiling(o, tmp);
  const runs: StoreRun[] = [];
  const profiling = o.profile || o.profileMix;
  const stores = profiling ? o.stores.slice(0, 1) : o.stores;
  // A seeded file or database is one size, its own.
  const sizes = streamsOnly
    ? []
    : profiling || o.sqliteFile !== null || o.pgDatabase !== null
      ? o.sizes.slice(0, 1)
      : o.sizes;
  for (const size of sizes) {
    for (const kind of stores) {
      if (isInterrupted()) return;
      const { run, profileDir, window, requests } = await benchStore(kind, size, o, tmp, ceiling, ceilingLoop);
      runs.push(run);
      if (profileDir) {
        const name = o.profileMix ? 'mix' : o.profileScenario;
        await reportProfile(profileDir, startedAt.replace(/[:.]/g, '-'), window, name, requests);
      }
    }
  }

  let fanOut: FanOutFigures[] = [];
  if (o.sections.includes('streams') && !profiling) {
    say("\nLive-stream fan-out (a fresh store per size; the streams are this process's sockets) …");
    fanOut = await runFanOut(stores, { ...o }, tmp);
    say(formatFanOut(fanOut));
  }

  const verdicts = profiling
    ? []
    : [...judge(runs, ceiling, o.connections), ...judgeLists(runs), ...judgeFanOut(fanOut)];
  say(formatVerdicts(verdicts));
  const { pgBaseUrl: _pg, redisUrl: _redis, ...options } = o;
  const report: RunReport = {
    startedAt,
    finishedAt: new Date().toISOString(),
    machine: m,
    options,
    ceiling,
    runs,
    fanOut,
    verdicts,
  };
  const file = await writeResults(RESULTS, report);
  say(`\nResults: ${file}`);
  say('The journeys burst (10,000 arrival steps in one minute) runs on its own: npm run bench:journeys');
  ok = true;
}

main()
  .catch((err: unknown) => {
    // After Ctrl-C the servers are gone on purpose; the failures that follow are not news.
    if (isInterrupted()) return;
    process.stderr.write(`\nBenchmark failed: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  })
  .finally(async () => {
    await cleanupAll();
  });
