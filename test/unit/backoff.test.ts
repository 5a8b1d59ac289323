import { describe, expect, it } from 'vitest';
import { cappedExponentialDelay, fullJitterDelay } from '../../src/platform/resilience/backoff.js';

/** A random source that returns `values` in turn. */
const sequence = (...values: number[]) => {
  let index = 0;
  return () => values[index++ % values.length] ?? 0;
};

describe('cappedExponentialDelay', () => {
  it('when attempts grow, then the delay doubles from the base until the cap', () => {
    const delays = [1, 2, 3, 4, 5, 6, 7].map((attempt) =>
      cappedExponentialDelay(attempt, 1_000, 60_000),
    );
    expect(delays).toEqual([1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 60_000]);
  });

  it('when the attempt is 0 or negative, then the delay is the base', () => {
    expect(cappedExponentialDelay(0, 250, 5_000)).toBe(250);
    expect(cappedExponentialDelay(-3, 250, 5_000)).toBe(250);
  });

  it('when the attempt is huge, then the delay is the cap (no overflow past it)', () => {
    expect(cappedExponentialDelay(10_000, 250, 5_000)).toBe(5_000);
  });
});

describe('fullJitterDelay', () => {
  it('when random is just below 1, then the delay is just below the doubling, capped ceiling', () => {
    const ceiling = (attempt: number) => fullJitterDelay(attempt, 100, 1_000, () => 0.999999);
    expect([1, 2, 3, 4, 5, 6].map(ceiling)).toEqual([99, 199, 399, 799, 999, 999]);
  });

  it('when random is 0, then the delay is 0 (full jitter starts at zero)', () => {
    expect(fullJitterDelay(5, 100, 1_000, () => 0)).toBe(0);
  });

  it('when random is 0.5, then the delay is half the ceiling', () => {
    expect(fullJitterDelay(3, 100, 1_000, () => 0.5)).toBe(200);
    expect(fullJitterDelay(30, 100, 1_000, () => 0.5)).toBe(500);
  });

  it('when drawn many times with Math.random, then every delay is a whole number in [0, ceiling) and they spread over the range', () => {
    const delays = Array.from({ length: 2_000 }, () => fullJitterDelay(4, 250, 5_000));
    for (const delay of delays) {
      expect(Number.isInteger(delay)).toBe(true);
      expect(delay).toBeGreaterThanOrEqual(0);
      expect(delay).toBeLessThan(2_000);
    }
    // 2,000 uniform draws: each quarter of [0, 2000) is hit (missing one has odds ~4 * 0.75^2000).
    const quarters = new Set(delays.map((delay) => Math.floor(delay / 500)));
    expect([...quarters].sort()).toEqual([0, 1, 2, 3]);
  });

  it('when random varies, then the delay follows it (jitter is not ignored)', () => {
    const random = sequence(0.1, 0.9);
    expect([
      fullJitterDelay(2, 1_000, 60_000, random),
      fullJitterDelay(2, 1_000, 60_000, random),
    ]).toEqual([200, 1_800]);
  });
});
