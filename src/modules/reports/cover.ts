// Owns splitting a time range into the rollup rows that sum to it: whole UTC days, hours and
// quarter-hours, each added or subtracted (a local day at UTC+1 is one UTC day minus its first
// hour plus the next day's first hour: three rows, not twenty-four), and the unaligned edges,
// read from the facts themselves.
import { GRAINS } from './facts.js';

export interface Piece {
  grain: number;
  /** Epoch seconds. */
  start: number;
  sign: 1 | -1;
}

const QUARTER = 900;

/**
 * Appends to `out` signed rollup pieces summing exactly to [a, b) (epoch seconds, multiples of 900),
 * each with `sign` (−1 when the caller takes the range away): whole blocks of the coarsest grain
 * inside, and each ragged end either added from finer grains or, when it is more than half a block,
 * taken as the whole block less the rest (decided by length, so linear).
 */
function go(out: Piece[], a: number, b: number, gi: number, sign: 1 | -1): void {
  if (a >= b) return;
  const G = GRAINS[gi]!;
  const flip = sign === 1 ? -1 : 1;
  if (G === QUARTER) {
    for (let s = a; s < b; s += G) out.push({ grain: G, start: s, sign });
    return;
  }
  const lo = Math.ceil(a / G) * G;
  const hi = Math.floor(b / G) * G;
  const L = Math.floor(a / G) * G;
  const R = Math.ceil(b / G) * G;
  if (lo > hi) {
    // Inside one block: finer pieces, or the block less both ends.
    if (b - a <= G / 2) {
      go(out, a, b, gi + 1, sign);
      return;
    }
    out.push({ grain: G, start: L, sign });
    go(out, L, a, gi + 1, flip);
    go(out, b, R, gi + 1, flip);
    return;
  }
  if (lo !== a) {
    if (lo - a <= a - L) go(out, a, lo, gi + 1, sign);
    else {
      out.push({ grain: G, start: L, sign });
      go(out, L, a, gi + 1, flip);
    }
  }
  for (let s = lo; s < hi; s += G) out.push({ grain: G, start: s, sign });
  if (hi !== b) {
    if (b - hi <= R - b) go(out, hi, b, gi + 1, sign);
    else {
      out.push({ grain: G, start: hi, sign });
      go(out, b, R, gi + 1, flip);
    }
  }
}

export interface Cover {
  pieces: Piece[];
  /** Ranges [from, to) in ms to read from the facts. */
  raw: [number, number][];
}

/** How [fromMs, toMs) is read: rollup pieces for its quarter-aligned part, facts for the rest. */
export function cover(fromMs: number, toMs: number): Cover {
  if (toMs <= fromMs) return { pieces: [], raw: [] };
  const a = Math.ceil(fromMs / 1000 / QUARTER) * QUARTER;
  const b = Math.floor(toMs / 1000 / QUARTER) * QUARTER;
  if (a >= b) return { pieces: [], raw: [[fromMs, toMs]] };
  const raw: [number, number][] = [];
  if (a * 1000 > fromMs) raw.push([fromMs, a * 1000]);
  if (b * 1000 < toMs) raw.push([b * 1000, toMs]);
  const pieces: Piece[] = [];
  go(pieces, a, b, 0, 1);
  return { pieces, raw };
}
