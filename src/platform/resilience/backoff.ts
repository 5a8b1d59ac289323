/**
 * The one backoff formula of the service: exponential growth from `baseMs`, doubled per
 * attempt, capped at `capMs`.
 *
 * `fullJitterDelay` (AWS Architecture Blog, "Exponential Backoff And Jitter") draws a uniformly
 * random delay in [0, min(cap, base * 2^(attempt-1))): callers that failed together (relays,
 * listeners, settlement retries of many payments) spread out instead of coming back in one wave.
 * `cappedExponentialDelay` is the same ceiling without jitter, for the one place whose delays are
 * a documented schedule (a refused outbox row is retried after 1 s, 2 s, 4 s ...).
 */

/** min(cap, base * 2^(attempt-1)); attempts below 1 count as 1. */
export function cappedExponentialDelay(attempt: number, baseMs: number, capMs: number): number {
  return Math.min(capMs, baseMs * 2 ** Math.max(0, attempt - 1));
}

/** A whole number of milliseconds in [0, cappedExponentialDelay(attempt, baseMs, capMs)). */
export function fullJitterDelay(
  attempt: number,
  baseMs: number,
  capMs: number,
  random: () => number = Math.random,
): number {
  return Math.floor(random() * cappedExponentialDelay(attempt, baseMs, capMs));
}
