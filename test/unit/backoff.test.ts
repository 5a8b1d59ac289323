import { describe, expect, it } from 'vitest';
import { fullJitterDelay } from '../../src/settlement/backoff.js';

describe('fullJitterDelay', () => {
  it('when attempts grow, then the ceiling doubles until the cap', () => {
    const ceiling = (attempt: number) => fullJitterDelay(attempt, 100, 1_000, () => 0.999999);
    expect([1, 2, 3, 4, 5, 6].map(ceiling)).toEqual([99, 199, 399, 799, 999, 999]);
  });

  it('when random is 0, then the delay is 0 (full jitter starts at zero)', () => {
    expect(fullJitterDelay(5, 100, 1_000, () => 0)).toBe(0);
  });
});
