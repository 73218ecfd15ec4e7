// Owns record identifiers: TypeID-style `<prefix>_<26 char lowercase ULID>`, time-ordered and
// monotonic within a millisecond, so ordering by id is ordering by creation.
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
} as const;

export type IdPrefix = (typeof ID_PREFIX)[keyof typeof ID_PREFIX];

const ulid = monotonicFactory();

export function newId(prefix: IdPrefix): string {
  return `${prefix}_${ulid().toLowerCase()}`;
}

/** The id pattern for a prefix, used by route param schemas. */
export const idPattern = (prefix: IdPrefix) => `^${prefix}_[0-9a-hjkmnp-tv-z]{26}$`;
