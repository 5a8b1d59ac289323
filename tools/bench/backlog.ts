import type pg from 'pg';

/** One reading of the settlement backlog: payments accepted and not yet terminal. */
export interface BacklogSample {
  /** Seconds since the step started. */
  atSeconds: number;
  backlog: number;
}

/** Whether the pipeline kept up over the last `windowSeconds` of a step at `rate`. */
export interface BacklogTrend {
  windowSeconds: number;
  /** Least-squares slope of the backlog over the window, payments per second. */
  slopePerSecond: number;
  /** Backlog at the window's start and end (the samples themselves). */
  first: number;
  last: number;
  /** Flat: the backlog gains less than FLAT_FRACTION of the arrivals; growing otherwise. */
  verdict: 'flat' | 'growing' | 'no data';
}

/**
 * A pipeline that keeps up settles what arrives: its backlog wobbles around rate x latency.
 * One that does not gains (arrivals - settlements) per second for as long as the load lasts.
 * Growing means gaining more than 2% of the arrivals: below that the slope is within the
 * wobble of a one-minute window on a shared machine.
 */
export const FLAT_FRACTION = 0.02;

/**
 * Reads the backlog (payments pending or processing) every `intervalMs` until stopped. A
 * reading that fails (the database busy) is skipped, not invented.
 */
export function sampleBacklog(
  pool: pg.Pool,
  intervalMs = 1_000,
): { stop: () => Promise<BacklogSample[]> } {
  const samples: BacklogSample[] = [];
  const started = performance.now();
  const state = { stopped: false };
  const loop = (async () => {
    while (!state.stopped) {
      const at = (performance.now() - started) / 1000;
      try {
        const { rows } = await pool.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM payments WHERE status IN ('pending', 'processing')`,
        );
        samples.push({ atSeconds: Math.round(at * 10) / 10, backlog: rows[0]?.n ?? 0 });
      } catch {
        // Skipped: a missing reading is better than a made-up one.
      }
      await new Promise((resolve) => setTimeout(resolve, intervalMs));
    }
  })();
  return {
    stop: async () => {
      state.stopped = true;
      await loop;
      return samples;
    },
  };
}

/** The backlog's trend over the last `windowSeconds` of the samples (see FLAT_FRACTION). */
export function backlogTrend(
  samples: readonly BacklogSample[],
  rate: number,
  windowSeconds: number,
): BacklogTrend {
  const end = samples.at(-1)?.atSeconds ?? 0;
  const window = samples.filter((s) => s.atSeconds >= end - windowSeconds);
  const first = window[0];
  const last = window.at(-1);
  if (window.length < 3 || !first || !last) {
    return { windowSeconds, slopePerSecond: 0, first: 0, last: 0, verdict: 'no data' };
  }
  const n = window.length;
  const meanX = window.reduce((sum, s) => sum + s.atSeconds, 0) / n;
  const meanY = window.reduce((sum, s) => sum + s.backlog, 0) / n;
  let covariance = 0;
  let variance = 0;
  for (const s of window) {
    covariance += (s.atSeconds - meanX) * (s.backlog - meanY);
    variance += (s.atSeconds - meanX) ** 2;
  }
  const slope = variance === 0 ? 0 : covariance / variance;
  return {
    windowSeconds: Math.round((last.atSeconds - first.atSeconds) * 10) / 10,
    slopePerSecond: Math.round(slope * 10) / 10,
    first: first.backlog,
    last: last.backlog,
    verdict: slope > FLAT_FRACTION * rate ? 'growing' : 'flat',
  };
}

/** A step of a rate sweep as far as the verdicts below need it. */
export interface StepVerdictInput {
  rate: number;
  /** Payments/s the API actually accepted during the step. */
  achieved: number;
  settleP99: number;
  unsettled: number;
  backlog: BacklogTrend;
}

/**
 * A step held its rate only if the API took (nearly) all of it: when the co-located API falls
 * behind the offered rate, the pipeline behind it sees less and its backlog stays flat for that
 * reason alone (2026-11-23: 811/s offered, 376/s accepted, "flat").
 */
export const ACCEPTED_FRACTION = 0.95;

export function tookTheRate(step: StepVerdictInput): boolean {
  return step.achieved >= ACCEPTED_FRACTION * step.rate;
}

/**
 * The highest rate at which the step and every slower one met `ok`: a rate that passes above
 * a failing one is luck on a shared machine, not capacity. Undefined when the slowest fails.
 */
export function highestRateHolding(
  steps: readonly StepVerdictInput[],
  ok: (step: StepVerdictInput) => boolean,
): number | undefined {
  let highest: number | undefined;
  for (const step of [...steps].sort((a, b) => a.rate - b.rate)) {
    if (!ok(step)) break;
    highest = step.rate;
  }
  return highest;
}
