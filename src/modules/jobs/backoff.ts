// Owns the one retry backoff of work done after commit (jobs, texts sent, webhook deliveries):
// exponential with full jitter, so failures that happened together are not retried together.

/** The longest wait before a retry, whatever the attempt. */
export const RETRY_CAP_MS = 4 * 3600_000;

/** Delay before the attempt after `attempts` failed ones: uniform in [0, min(cap, base·2^(n-1))). */
export function retryDelayMs(attempts: number, baseMs: number, random: () => number = Math.random): number {
  const window = Math.min(RETRY_CAP_MS, baseMs * 2 ** Math.min(Math.max(attempts, 1) - 1, 40));
  return Math.floor(random() * window);
}
