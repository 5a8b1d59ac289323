import { describe, expect, it } from 'vitest';
import { createRateLimiter } from '../../src/http/rate-limiter.js';

describe('createRateLimiter', () => {
  it('when a merchant exceeds its burst, then it is refused until tokens refill', () => {
    let t = 0;
    const take = createRateLimiter(2, 3, () => t);
    expect([take('m'), take('m'), take('m')].every((r) => r.allowed)).toBe(true);
    expect(take('m')).toEqual({ allowed: false, retryAfterSeconds: 1 });
    t = 500; // half a second refills one token at 2/s
    expect(take('m').allowed).toBe(true);
    expect(take('m').allowed).toBe(false);
  });

  it('when one merchant is throttled, then another is not', () => {
    const take = createRateLimiter(1, 1, () => 0);
    expect(take('a').allowed).toBe(true);
    expect(take('a').allowed).toBe(false);
    expect(take('b').allowed).toBe(true);
  });
});
