/** How far a scheduled delay is jittered either way (+-20%). */
export const RETRY_JITTER = 0.2;

/**
 * The delay before the attempt after `attempts` failed ones (1 = the first attempt failed):
 * the schedule's step for it, jittered +-20% (so a burst of failures does not come back as a
 * burst), never before the endpoint's Retry-After (`notBeforeMs`), which is capped at the
 * schedule's longest step (an endpoint cannot park a delivery for days).
 */
export function webhookRetryDelayMs(
  schedule: readonly number[],
  attempts: number,
  notBeforeMs: number | undefined,
  random: () => number,
): number {
  const longest = Math.max(...schedule);
  const step = schedule[Math.min(Math.max(attempts, 1), schedule.length) - 1] ?? longest;
  const jittered = Math.round(step * (1 - RETRY_JITTER + 2 * RETRY_JITTER * random()));
  return Math.max(jittered, Math.min(notBeforeMs ?? 0, longest));
}

/** How long the whole schedule lasts: an endpoint failing for longer is disabled. */
export function scheduleSpanMs(schedule: readonly number[]): number {
  return schedule.reduce((sum, step) => sum + step, 0);
}
