import { describe, expect, it } from 'vitest';
import { parseRetryAfterMs } from '../../src/webhooks/retry-after.js';
import { scheduleSpanMs, webhookRetryDelayMs } from '../../src/webhooks/webhook-retry-delay.js';

const schedule = [5_000, 300_000, 1_800_000];

describe('webhookRetryDelayMs', () => {
  it('when attempts fail in turn, then each waits its step, jittered within +-20%', () => {
    expect([1, 2, 3].map((n) => webhookRetryDelayMs(schedule, n, undefined, () => 0.5))).toEqual(
      schedule,
    );
    expect(webhookRetryDelayMs(schedule, 1, undefined, () => 0)).toBe(4_000);
    expect(webhookRetryDelayMs(schedule, 1, undefined, () => 0.999999)).toBe(6_000);
  });

  it('when the endpoint asked for a later retry, then the delay is at least that, capped at the longest step', () => {
    expect(webhookRetryDelayMs(schedule, 1, 60_000, () => 0.5)).toBe(60_000);
    expect(webhookRetryDelayMs(schedule, 1, 1_000, () => 0.5)).toBe(5_000);
    expect(webhookRetryDelayMs(schedule, 1, 86_400_000, () => 0.5)).toBe(1_800_000);
  });

  it('when attempts run past the schedule, then the last step is used', () => {
    expect(webhookRetryDelayMs(schedule, 9, undefined, () => 0.5)).toBe(1_800_000);
  });

  it('spans the sum of the steps', () => {
    expect(scheduleSpanMs(schedule)).toBe(2_105_000);
  });
});

describe('parseRetryAfterMs', () => {
  const now = Date.parse('2026-01-01T00:00:00Z');
  it.each([
    [undefined, null],
    ['120', 120_000],
    [' 0 ', 0],
    ['Thu, 01 Jan 2026 00:01:00 GMT', 60_000],
    ['Wed, 31 Dec 2025 23:00:00 GMT', 0],
    ['soon', null],
    ['-5', null],
    ['1.5', null],
  ])('when the header is %j, then the delay is %j', (value, expected) => {
    expect(parseRetryAfterMs(value, now)).toBe(expected);
  });
});
