import { describe, expect, it } from 'vitest';
import { rateLimitHeaders } from '../../src/rate-limits/rate-limit-headers.js';

describe('rateLimitHeaders', () => {
  it('when the default tier has 57 requests left, then the fields follow the draft-10 structured form', () => {
    expect(
      rateLimitHeaders(
        { name: 'default', ratePerSecond: 100, burst: 200 },
        { allowed: true, remaining: 57, resetSeconds: 2, retryAfterSeconds: 0 },
      ),
    ).toEqual({ 'RateLimit-Policy': '"default";q=200;w=2', RateLimit: '"default";r=57;t=2' });
  });

  it('when the refill window is not a whole number of seconds, then w rounds up (an sf-integer)', () => {
    const headers = rateLimitHeaders(
      { name: 'unauthenticated', ratePerSecond: 1 / 60, burst: 20 },
      { allowed: false, remaining: 0, resetSeconds: 1200, retryAfterSeconds: 60 },
    );
    expect(headers['RateLimit-Policy']).toBe('"unauthenticated";q=20;w=1200');
    expect(
      rateLimitHeaders(
        { name: 'odd', ratePerSecond: 3, burst: 4 },
        { allowed: true, remaining: 3, resetSeconds: 1, retryAfterSeconds: 0 },
      )['RateLimit-Policy'],
    ).toBe('"odd";q=4;w=2');
  });
});
