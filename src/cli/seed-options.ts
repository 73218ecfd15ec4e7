// Owns the `seed` command's options: their defaults, bounds and parsing, kept apart from the
// seeder so the command line checks them without loading the store and its drivers.

export interface SeedOptions {
  guests: number;
  conversations: number;
  messages: number;
  tasks: number;
  knowledge: number;
  /** Conversations and tasks are spread over this many days before now. */
  days: number;
  /** Rows per INSERT statement (lowered per table to stay under the store's parameter limit). */
  batch: number;
}

const DEFAULTS: SeedOptions = {
  guests: 200,
  conversations: 500,
  messages: 2000,
  tasks: 300,
  knowledge: 40,
  days: 90,
  batch: 1000,
};
// Upper bounds keep a typo (an extra zero or three) from filling the disk; phones allow 10^8 guests.
const LIMITS: Record<keyof SeedOptions, [number, number]> = {
  guests: [0, 10_000_000],
  conversations: [0, 20_000_000],
  messages: [0, 500_000_000],
  tasks: [0, 20_000_000],
  knowledge: [0, 1_000_000],
  days: [1, 400],
  batch: [1, 10_000],
};
export const MAX_GUEST_SEQUENCE = 100_000_000;
const OPTION_NAMES = Object.keys(DEFAULTS)
  .map((k) => `--${k}`)
  .join(' ');

export const SEED_USAGE =
  '  seed [--guests N] [--conversations N] [--messages N] [--tasks N] [--knowledge N] [--days N] [--batch N] [--force]\n' +
  `                                                demo data (defaults ${DEFAULTS.guests}/${DEFAULTS.conversations}/${DEFAULTS.messages}/${DEFAULTS.tasks}/${DEFAULTS.knowledge}, over ${DEFAULTS.days} days, batch ${DEFAULTS.batch}), with its report figures;\n` +
  '                                                refused under NODE_ENV=production unless given --force\n';

/** A bad option; the message is one line naming it. */
export class SeedArgsError extends Error {}

export function parseSeedArgs(args: string[]): SeedOptions {
  const out = { ...DEFAULTS };
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    const m = /^--([a-z]+)(?:=(.*))?$/.exec(arg);
    const name = m?.[1];
    if (name === undefined || !Object.hasOwn(DEFAULTS, name)) {
      throw new SeedArgsError(`unknown option "${arg}"; options: ${OPTION_NAMES}`);
    }
    const key = name as keyof SeedOptions;
    // `--guests -1` is taken as a value (and refused below), not as another option.
    const raw = m?.[2] ?? args[++i];
    const [min, max] = LIMITS[key];
    if (raw === undefined) throw new SeedArgsError(`--${key}: a number is required`);
    const n = /^\d{1,12}$/.test(raw) ? Number(raw) : Number.NaN;
    if (!(n >= min && n <= max)) {
      throw new SeedArgsError(`--${key}: must be a whole number from ${min} to ${formatCount(max)}, got "${raw}"`);
    }
    out[key] = n;
  }
  if (out.conversations > 0 && out.guests === 0) {
    throw new SeedArgsError('--conversations: needs --guests of at least 1');
  }
  if (out.messages > 0 && out.conversations === 0) {
    throw new SeedArgsError('--messages: needs --conversations of at least 1');
  }
  return out;
}

/** A count as the seeder prints it: 1,000,000. */
export const formatCount = (n: number): string => Math.round(n).toLocaleString('en-US');
