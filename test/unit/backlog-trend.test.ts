import { describe, expect, it } from 'vitest';
import {
  backlogTrend,
  highestRateHolding,
  tookTheRate,
  type BacklogSample,
  type StepVerdictInput,
} from '../../tools/bench/backlog.js';

/** One sample a second for `seconds`, backlog = f(t). */
function samples(seconds: number, f: (t: number) => number): BacklogSample[] {
  return Array.from({ length: seconds + 1 }, (_, t) => ({ atSeconds: t, backlog: f(t) }));
}

describe('backlogTrend', () => {
  it('when the backlog wobbles around a level, then it is flat', () => {
    const trend = backlogTrend(
      samples(90, (t) => 200 + (t % 2 === 0 ? 30 : -30)),
      500,
      60,
    );
    expect(trend.verdict).toBe('flat');
    expect(trend.windowSeconds).toBe(60);
  });

  it('when the pipeline settles 50/s less than 500/s arrive, then it is growing at ~50/s', () => {
    const trend = backlogTrend(
      samples(90, (t) => 50 * t),
      500,
      60,
    );
    expect(trend.verdict).toBe('growing');
    expect(trend.slopePerSecond).toBe(50);
    expect(trend.first).toBe(1_500);
    expect(trend.last).toBe(4_500);
  });

  it('when the backlog only grew before the window, then the window decides: flat', () => {
    const trend = backlogTrend(
      samples(90, (t) => Math.min(t, 20) * 100),
      500,
      60,
    );
    expect(trend.verdict).toBe('flat');
  });

  it('when there are fewer than three samples, then there is no verdict', () => {
    expect(
      backlogTrend(
        samples(1, () => 5),
        500,
        60,
      ).verdict,
    ).toBe('no data');
  });
});

describe('highestRateHolding', () => {
  const step = (rate: number, settleP99: number, achieved = rate): StepVerdictInput => ({
    rate,
    achieved,
    settleP99,
    unsettled: 0,
    backlog: { windowSeconds: 60, slopePerSecond: 0, first: 0, last: 0, verdict: 'flat' },
  });

  it('when a faster step passes above a failing one, then the rate below the failure counts', () => {
    const steps = [step(500, 100), step(100, 50), step(300, 900), step(200, 80)];
    expect(highestRateHolding(steps, (s) => s.settleP99 <= 250)).toBe(200);
  });

  it("when the API took less than 95% of a step's rate, then that step does not hold it, however flat the backlog", () => {
    const steps = [step(200, 80), step(400, 90, 390), step(800, 90, 376)];
    expect(highestRateHolding(steps, (s) => tookTheRate(s) && s.settleP99 <= 250)).toBe(400);
  });

  it('when the slowest step fails, then no rate holds', () => {
    expect(highestRateHolding([step(100, 300)], (s) => s.settleP99 <= 250)).toBeUndefined();
  });
});
