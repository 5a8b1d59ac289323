/**
 * Exponential backoff with full jitter (AWS Architecture Blog, "Exponential Backoff And
 * Jitter"): a uniformly random delay in [0, min(cap, base * 2^(attempt-1))]. Full jitter
 * spreads retries of many payments that failed together, so a recovering acquirer is not hit
 * by a synchronized wave.
 */
export function fullJitterDelay(
  attempt: number,
  baseMs: number,
  capMs: number,
  random: () => number = Math.random,
): number {
  const ceiling = Math.min(capMs, baseMs * 2 ** Math.max(0, attempt - 1));
  return Math.floor(random() * ceiling);
}
