// Owns the sections of a store's run beyond the autocannon scenarios: the depth figures of each
// list (with the long conversation they need), the conversation list in an open loop, and the realistic
// mix; and the ceiling's own open loops, the scale they are read on.
import { type DepthFigures, depthLists, formatDepth, measureDepth } from './depth.js';
import { openLoop, type Workload } from './http-load.js';
import { formatLoops, type LoopFigures, type LoopSettings, measureLoops } from './loops.js';
import { type AloneSample, measureAlone, mixAccounts, mixWorkload } from './mix.js';
import type { BenchOptions } from './options.js';
import type { NodeChild } from './proc.js';
import { sendsBacklog } from './sends.js';
import { formatTwin, measureTwin, type TwinFigures } from './twin.js';

const say = (text: string) => process.stdout.write(`${text}\n`);

/** The share of the maximum each open loop offers (docs/performance.md §3: the fresh list at half, the mix at 0.8). */
export const LIST_FRACTION = 0.5;
export const MIX_FRACTION = 0.8;
/** Connections of the closed loops that find a single request's maximum, as the scenarios use. */
const CLOSED_USERS = 50;

const single =
  (path: string, headers: Record<string, string> = {}) =>
  (): Workload => ({
    users: CLOSED_USERS,
    next: () => ({ method: 'GET', path, headers }),
  });

const settings = (o: BenchOptions): LoopSettings => ({ durationS: o.durationS, warmupS: o.warmupS });

/** Bare Fastify at half and at 0.8 of its own closed-loop maximum. */
export async function ceilingLoops(baseUrl: string, o: BenchOptions): Promise<LoopFigures[]> {
  const half = await measureLoops(
    baseUrl,
    'ceiling',
    'bare Fastify GET /',
    single('/'),
    LIST_FRACTION,
    settings(o),
    null,
  );
  const more = await measureLoops(
    baseUrl,
    'ceiling',
    'bare Fastify GET /',
    single('/'),
    MIX_FRACTION,
    settings(o),
    null,
  );
  const rows = [half, more];
  say(formatLoops(rows, half.closed.reqPerSec));
  return rows;
}

export interface SectionInput {
  baseUrl: string;
  server: NodeChild;
  token: string;
  password: string;
  databaseUrl: string;
  hotConversationId: string | null;
  ceilingClosed: number | null;
  /** Where the mix's twin server runs from and logs to. */
  twinDirs: { cwd: string; logDir: string };
}

export interface SectionResults {
  depth: DepthFigures[];
  loops: LoopFigures[];
  /** The mix's requests timed one at a time, for its twin (bench/twin.ts); absent when not run. */
  mixAlone?: AloneSample[];
  /** The mix's twin, its open loops taken in turn with the mix's; absent when not run. */
  twin?: TwinFigures;
}

export async function runSections(o: BenchOptions, input: SectionInput): Promise<SectionResults> {
  const out: SectionResults = { depth: [], loops: [] };
  const { baseUrl, server, token } = input;
  if (o.sections.includes('depth') && !o.profileMix && input.hotConversationId !== null) {
    say('  depth figures (the walk of each list takes a while at 1M) …');
    for (const list of depthLists(input.hotConversationId)) {
      const f = await measureDepth(baseUrl, token, list, o.walkRows);
      out.depth.push(f);
      say(`    ${f.label}: walked ${f.walkRows.toLocaleString('en-US')} rows in ${f.walkS.toFixed(1)} s`);
    }
    say(formatDepth(out.depth));
  }
  if (o.sections.includes('loops') && !o.profileMix) {
    const auth = { authorization: `Bearer ${token}` };
    say('  open loop: the conversation list …');
    out.loops.push(
      await measureLoops(
        baseUrl,
        'list.fresh',
        'GET /conversations?status=open',
        single('/api/v1/conversations?status=open&limit=20', auth),
        LIST_FRACTION,
        settings(o),
        server,
      ),
    );
  }
  if (o.sections.includes('mix') || o.profileMix) {
    say('  the realistic mix: logging in the staff and managers …');
    const accounts = await mixAccounts(baseUrl, input.password);
    // Each workload gets its own random sequence from the same seed: the same requests each time.
    say('  the mix …');
    out.loops.push(
      await measureLoops(
        baseUrl,
        'mix',
        'mix 80/20, 20 users',
        () => mixWorkload(accounts, {}),
        MIX_FRACTION,
        settings(o),
        server,
        input.databaseUrl,
      ),
    );
    if (!o.profileMix) {
      say("  the mix's requests one at a time, for its twin …");
      // Timed with the open loop's texts already sent: a request alone shares the loop with nothing.
      await sendsBacklog(input.databaseUrl);
      out.mixAlone = await measureAlone(baseUrl, accounts, o.durationS);
    }
  }
  if (out.loops.length > 0) say(formatLoops(out.loops, input.ceilingClosed));
  const mix = out.loops.find((l) => l.id === 'mix');
  if (mix !== undefined && out.mixAlone !== undefined && out.mixAlone.length > 0) {
    // The twin while the API idles, so that the mix can be run again between the twin's rounds.
    say(`  the mix's twin, then the mix and its twin in turn (${o.mixRounds} rounds) …`);
    const accounts = await mixAccounts(baseUrl, input.password);
    out.twin = await measureTwin(out.mixAlone, mix, MIX_FRACTION, settings(o), {
      ...input.twinDirs,
      rounds: o.mixRounds,
      mixAgain: async () => {
        // Each round starts with no text left to send, as the first did.
        await sendsBacklog(input.databaseUrl);
        return openLoop(baseUrl, mixWorkload(accounts, {}), mix.closed.reqPerSec * MIX_FRACTION, o.durationS);
      },
    });
    say(formatTwin(out.twin, mix, input.ceilingClosed));
  }
  return out;
}
