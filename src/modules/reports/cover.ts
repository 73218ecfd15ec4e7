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
const neg = (ps: Piece[]): Piece[] => ps.map((p) => ({ ...p, sign: p.sign === 1 ? -1 : 1 }));
const run = (grain: number, a: number, b: number): Piece[] => {
  const out: Piece[] = [];
  for (let s = a; s < b; s += grain) out.push({ grain, start: s, sign: 1 });
  return out;
};

/**
 * Signed rollup pieces summing exactly to [a, b) (epoch seconds, multiples of 900): whole blocks of
 * the coarsest grain inside, and each ragged end either added from finer grains or, when it is more
 * than half a block, taken as the whole block less the rest (decided by length, so linear).
 */
function go(a: number, b: number, gi: number): Piece[] {
  if (a >= b) return [];
  const G = GRAINS[gi]!;
  if (G === QUARTER) return run(G, a, b);
  const lo = Math.ceil(a / G) * G;
  const hi = Math.floor(b / G) * G;
  const L = Math.floor(a / G) * G;
  const R = Math.ceil(b / G) * G;
  const block = (start: number): Piece => ({ grain: G, start, sign: 1 });
  if (lo > hi) {
    // Inside one block: finer pieces, or the block less both ends.
    if (b - a <= G / 2) return go(a, b, gi + 1);
    return [block(L), ...neg(go(L, a, gi + 1)), ...neg(go(b, R, gi + 1))];
  }
  const left = lo === a ? [] : lo - a <= a - L ? go(a, lo, gi + 1) : [block(L), ...neg(go(L, a, gi + 1))];
  const right = hi === b ? [] : b - hi <= R - b ? go(hi, b, gi + 1) : [block(hi), ...neg(go(b, R, gi + 1))];
  return [...left, ...run(G, lo, hi), ...right];
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
  return { pieces: go(a, b, 0), raw };
}
