// Owns the benchmark's command line: quick or full, which stores, load settings, and the data
// sizes to seed (guests, messages and tasks in the proportions of the seed command's defaults).
import { parseArgs } from 'node:util';

export type StoreKind = 'sqlite' | 'postgres';

export interface DataSize {
  label: string;
  guests: number;
  conversations: number;
  messages: number;
  tasks: number;
  knowledge: number;
}

export interface BenchOptions {
  full: boolean;
  stores: StoreKind[];
  sizes: DataSize[];
  connections: number;
  durationS: number;
  warmupS: number;
  /** On a shared machine: wait up to this many seconds for idle CPUs before each scenario. */
  quietS: number;
  /** Only one scenario, with the server under --cpu-prof; prints the profile's top costs. */
  profile: boolean;
  /** The scenario --profile runs (an id of bench/scenarios.ts). */
  profileScenario: string;
  /** Scenario ids to run (all when null). */
  scenarioIds: string[] | null;
  pgBaseUrl: string;
  redisUrl: string;
  /** The parts of a run: the autocannon scenarios, the depth figures, the open loops, the mix. */
  sections: Section[];
  /** A seeded SQLite file to copy instead of seeding (its own size). */
  sqliteFile: string | null;
  /** A seeded PostgreSQL database to use in place (kept) instead of a fresh one. */
  pgDatabase: string | null;
  /** Messages of the one long conversation the depth figures page through. */
  hotMessages: number;
  /** Stop each depth walk after this many rows (default: the whole list). */
  walkRows: number;
  /** The mix, with the server under --cpu-prof; prints the profile's top costs. */
  profileMix: boolean;
  /** The live-stream fan-out section: streams per run, each on each store. */
  streamSizes: number[];
  /** Open loops of the mix and of its twin taken in turn (bench/twin.ts); the verdict is their median ratio. */
  mixRounds: number;
}

export const SECTIONS = ['scenarios', 'depth', 'loops', 'mix', 'streams'] as const;
/** The sections of a run without --only: the fan-out needs --streams (minutes, and 10k descriptors). */
const DEFAULT_SECTIONS: Section[] = ['scenarios', 'depth', 'loops', 'mix'];
export type Section = (typeof SECTIONS)[number];

export const USAGE = `Usage: npm run bench -- [options]

  (no option)        quick: SQLite, 10k conversations, 10 s per scenario after a 2 s warm-up
  --full             10k and 1M conversations (seeding 1M takes minutes per store)
  --sizes LIST       conversations to seed, e.g. 10k,100k,1M (overrides --full's sizes)
  --pg               also PostgreSQL + Redis (a fresh database, dropped afterwards)
  --pg-only          PostgreSQL + Redis only
  --duration S       seconds measured per scenario (default 10)
  --warmup S         seconds of warm-up per scenario (default 2)
  --connections N    concurrent connections (default 50)
  --wait-quiet S     before each scenario, wait up to S s for the CPUs to be idle (a shared machine)
  --profile          profile the conversation list: server under --cpu-prof, top costs printed
  --profile-scenario ID  profile this scenario instead (e.g. messages.post, auth.me)
  --profile-mix      profile the realistic mix the same way
  --scenario IDS     run only these scenarios, e.g. messages.post,conversations.list (A/B runs)
  --streams          also the live-stream fan-out: 1,000 / 5,000 / 10,000 streams × 100 messages at
                     20/s on a fresh store (with --pg: three instances on PostgreSQL + Redis), ~4 min
  --stream-sizes L   the fan-out's stream counts, e.g. 1000,5000 (default 1000,5000,10000)
  --mix-rounds N     open loops of the mix and of its twin taken in turn (default 3); the verdict is
                     the median of the rounds' ratios
  --only LIST        run only these sections: scenarios,depth,loops,mix,streams (default all but
                     streams; --only streams skips the ceiling and the seeded runs)
  --sqlite-file F    copy this seeded SQLite file instead of seeding (the run's size is the file's)
  --pg-database DB   use this seeded PostgreSQL database in place (kept) instead of a fresh one
  --walk-rows N      stop each cursor walk after N rows (default: the whole list)
  --hot-messages N   messages of the long conversation the depth figures page (default 100000)
  --pg-url URL       PostgreSQL server to create the database on (default postgres://postgres@127.0.0.1:5432)
  --redis-url URL    Redis for the PostgreSQL runs (default redis://127.0.0.1:6379)

Other benchmarks, each on its own: npm run bench:reports, bench:streams, bench:attachments, and
bench:journeys (10,000 stays' arrival steps due in one minute, on SQLite and PostgreSQL).
`;

/** The seed command's defaults are 200 guests, 500 conversations, 2,000 messages, 300 tasks. */
export function sizeFor(conversations: number): DataSize {
  const label = conversations >= 1_000_000 ? `${conversations / 1_000_000}M` : `${conversations / 1000}k`;
  return {
    label,
    guests: Math.round(conversations * 0.4),
    conversations,
    messages: conversations * 4,
    tasks: Math.round(conversations * 0.6),
    // A hotel's knowledge base does not grow with its conversations.
    knowledge: 40,
  };
}

function parseSizes(raw: string): DataSize[] {
  return raw.split(',').map((part) => {
    const m = /^(\d+)(k|m)?$/i.exec(part.trim());
    const n = m ? Number(m[1]) * (m[2] === undefined ? 1 : m[2].toLowerCase() === 'k' ? 1000 : 1_000_000) : 0;
    if (n < 1000) throw new Error(`--sizes: "${part}" is not a count of at least 1k, like 10k or 1M`);
    return sizeFor(n);
  });
}

function parseSections(raw: string | undefined, streams: boolean): Section[] {
  if (raw === undefined) return streams ? [...SECTIONS] : [...DEFAULT_SECTIONS];
  const parts = raw.split(',').map((p) => p.trim());
  for (const p of parts) {
    if (!(SECTIONS as readonly string[]).includes(p))
      throw new Error(`--only: "${p}" is not one of ${SECTIONS.join(', ')}`);
  }
  return parts as Section[];
}

function positive(name: string, raw: string | undefined, def: number): number {
  if (raw === undefined) return def;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name}: a whole number of at least 1 is required`);
  return n;
}

export function parseOptions(argv: string[]): BenchOptions | 'help' {
  const { values } = parseArgs({
    args: argv,
    options: {
      full: { type: 'boolean', default: false },
      sizes: { type: 'string' },
      pg: { type: 'boolean', default: false },
      'pg-only': { type: 'boolean', default: false },
      duration: { type: 'string' },
      warmup: { type: 'string' },
      connections: { type: 'string' },
      'wait-quiet': { type: 'string' },
      profile: { type: 'boolean', default: false },
      'profile-scenario': { type: 'string' },
      'profile-mix': { type: 'boolean', default: false },
      scenario: { type: 'string' },
      only: { type: 'string' },
      streams: { type: 'boolean', default: false },
      'stream-sizes': { type: 'string' },
      'mix-rounds': { type: 'string' },
      'sqlite-file': { type: 'string' },
      'pg-database': { type: 'string' },
      'hot-messages': { type: 'string' },
      'walk-rows': { type: 'string' },
      'pg-url': { type: 'string' },
      'redis-url': { type: 'string' },
      help: { type: 'boolean', default: false },
    },
    strict: true,
  });
  if (values.help) return 'help';
  const stores: StoreKind[] = values['pg-only'] ? ['postgres'] : values.pg ? ['sqlite', 'postgres'] : ['sqlite'];
  const full = values.full ?? false;
  return {
    full,
    stores,
    sizes:
      values.sizes !== undefined
        ? parseSizes(values.sizes)
        : full
          ? [sizeFor(10_000), sizeFor(1_000_000)]
          : [sizeFor(10_000)],
    connections: positive('connections', values.connections, 50),
    durationS: positive('duration', values.duration, 10),
    warmupS: values.warmup === '0' ? 0 : positive('warmup', values.warmup, 2),
    quietS: values['wait-quiet'] === undefined ? 0 : positive('wait-quiet', values['wait-quiet'], 0),
    profile: (values.profile ?? false) || values['profile-scenario'] !== undefined,
    profileScenario: values['profile-scenario'] ?? 'conversations.list',
    scenarioIds: values.scenario === undefined ? null : values.scenario.split(',').map((p) => p.trim()),
    pgBaseUrl: (values['pg-url'] ?? 'postgres://postgres@127.0.0.1:5432').replace(/\/+$/, ''),
    redisUrl: values['redis-url'] ?? 'redis://127.0.0.1:6379',
    sections: parseSections(values.only, values.streams ?? false),
    sqliteFile: values['sqlite-file'] ?? null,
    pgDatabase: values['pg-database'] ?? null,
    hotMessages: positive('hot-messages', values['hot-messages'], 100_000),
    profileMix: values['profile-mix'] ?? false,
    streamSizes:
      values['stream-sizes'] === undefined
        ? [1000, 5000, 10_000]
        : values['stream-sizes'].split(',').map((p) => positive('stream-sizes', p.trim(), 1)),
    mixRounds: positive('mix-rounds', values['mix-rounds'], 3),
    walkRows:
      values['walk-rows'] === undefined ? Number.POSITIVE_INFINITY : positive('walk-rows', values['walk-rows'], 0),
  };
}
