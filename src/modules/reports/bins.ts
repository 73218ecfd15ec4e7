// Owns the histogram that medians and p90s of many figures are read from: one bin per second up
// to 20 s, then bins 10 % wide, so a value read back from its bin is within 1 s below 20 s and
// within 5 % above (the bin's geometric middle).

const LINEAR = 20;
const RATIO = 1.1;
const LN_RATIO = Math.log(RATIO);

/** The bin of a duration in seconds (≥ 0). */
export function binOf(seconds: number): number {
  if (seconds < LINEAR) return Math.max(0, Math.floor(seconds));
  return LINEAR + Math.floor(Math.log(seconds / LINEAR) / LN_RATIO + 1e-9);
}

/** The value a bin stands for: the middle of a 1 s bin, the geometric middle of a 10 % bin. */
export function binValue(bin: number): number {
  if (bin < LINEAR) return bin + 0.5;
  return LINEAR * RATIO ** (bin - LINEAR) * Math.sqrt(RATIO);
}

/**
 * The q-quantile (0 < q < 1) of sorted values: the median of an even count is the mean of the two
 * middle values; otherwise the nearest rank (the smallest value at least a share q of all are at
 * or below).
 */
export function quantileOfSorted(sorted: number[], q: number): number | null {
  const n = sorted.length;
  if (n === 0) return null;
  if (q === 0.5 && n % 2 === 0) return (sorted[n / 2 - 1]! + sorted[n / 2]!) / 2;
  return sorted[Math.max(0, Math.ceil(q * n) - 1)]!;
}

/** The q-quantile read from bin counts (bin → count), by the same rule as quantileOfSorted. */
export function quantileOfBins(bins: Map<number, number>, q: number): number | null {
  const dense = new Float64Array(Math.max(0, ...bins.keys()) + 1);
  for (const [bin, n] of bins) dense[bin] = n;
  return quantileOfCounts(dense, q);
}

/**
 * The q-quantile read from counts indexed by bin (a report's sums: src/modules/reports/figures.ts),
 * by the same rule as quantileOfSorted; a bin whose count is not above 0 holds nothing.
 */
export function quantileOfCounts(counts: ArrayLike<number>, q: number): number | null {
  let n = 0;
  for (let b = 0; b < counts.length; b++) if (counts[b]! > 0) n += counts[b]!;
  if (n === 0) return null;
  const at = (rank: number) => {
    let seen = 0;
    let last = 0;
    for (let b = 0; b < counts.length; b++) {
      const c = counts[b]!;
      if (c <= 0) continue;
      seen += c;
      last = b;
      if (seen >= rank) return binValue(b);
    }
    return binValue(last);
  };
  if (q === 0.5 && n % 2 === 0) return (at(n / 2) + at(n / 2 + 1)) / 2;
  return at(Math.max(1, Math.ceil(q * n)));
}
