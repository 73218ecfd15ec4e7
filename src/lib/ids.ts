// Owns record identifiers: TypeID-style `<prefix>_<26 char lowercase ULID>`, time-ordered and
// monotonic within a millisecond, so ordering by id is ordering by creation.
import { randomFillSync } from 'node:crypto';
import { monotonicFactory } from 'ulidx';

export const ID_PREFIX = {
  conversation: 'cnv',
  message: 'msg',
  guest: 'gst',
  task: 'tsk',
  knowledge: 'kb',
  staff: 'stf',
  webhook: 'whk',
  delivery: 'whd',
  apiKey: 'key',
  audit: 'aud',
  cannedResponse: 'cr',
  attachment: 'att',
  stay: 'sty',
} as const;

export type IdPrefix = (typeof ID_PREFIX)[keyof typeof ID_PREFIX];

/**
 * Random numbers for ULIDs, drawn from a pool of cryptographically random bytes refilled 4 KiB at
 * a time: the default asks the OS on every call, a system call per id written.
 */
const pool = Buffer.alloc(4096);
let used = pool.length;
function random(): number {
  if (used + 4 > pool.length) {
    randomFillSync(pool);
    used = 0;
  }
  const n = pool.readUInt32LE(used);
  used += 4;
  return n / 0x1_0000_0000;
}

const ulid = monotonicFactory(random);

export function newId(prefix: IdPrefix): string {
  return `${prefix}_${ulid().toLowerCase()}`;
}

/** The id pattern for a prefix, used by route param schemas. */
export const idPattern = (prefix: IdPrefix) => `^${prefix}_[0-9a-hjkmnp-tv-z]{26}$`;
