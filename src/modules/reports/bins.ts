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
  const entries = [...bins.entries()].filter(([, n]) => n > 0).sort((a, b) => a[0] - b[0]);
  const n = entries.reduce((s, [, c]) => s + c, 0);
  if (n === 0) return null;
  const at = (rank: number) => {
    let seen = 0;
    for (const [bin, c] of entries) {
      seen += c;
      if (seen >= rank) return binValue(bin);
    }
    return binValue(entries[entries.length - 1]![0]);
  };
  if (q === 0.5 && n % 2 === 0) return (at(n / 2) + at(n / 2 + 1)) / 2;
  return at(Math.max(1, Math.ceil(q * n)));
}
