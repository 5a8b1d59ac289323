import { describe, expect, it } from 'vitest';
import {
  BUSY_POLL_MS,
  BUSY_WINDOW_MS,
  createWakeupPolicy,
} from '../../src/outbox/outbox-wakeups.js';

describe('outbox wake-up policy', () => {
  it('when the relay starts idle, then it asks for wake-ups before its first round and waits the poll interval after an empty one', () => {
    const policy = createWakeupPolicy(1_000);
    expect(policy.shouldRequest(0)).toBe(true);
    policy.requested(0);
    expect(policy.windowMs).toBe(10_000);
    expect(policy.shouldRequest(1)).toBe(false);
    expect(policy.idleWaitMs(1)).toBe(1_000);
  });

  it('when rounds keep claiming rows, then it never asks (writers commit without NOTIFY) and polls every few milliseconds, until it has been idle for the busy window', () => {
    const policy = createWakeupPolicy(1_000);
    policy.requested(0);
    // Busy for a minute: a claim every 5 ms; the window it asked for at 0 runs out unrenewed.
    for (let now = 5; now <= 60_000; now += 5) {
      policy.claimed(now);
      expect(policy.shouldRequest(now + 1)).toBe(false);
      expect(policy.idleWaitMs(now + 1)).toBe(BUSY_POLL_MS);
    }
    const quiet = 60_000 + BUSY_WINDOW_MS;
    expect(policy.shouldRequest(quiet)).toBe(true);
    policy.requested(quiet);
    expect(policy.idleWaitMs(quiet + 1)).toBe(1_000);
  });

  it('when it stays idle, then it renews the window before it could run out during a poll', () => {
    const policy = createWakeupPolicy(1_000);
    policy.requested(0);
    // Renewed once less than a poll interval (plus a second's margin) is left.
    expect(policy.shouldRequest(7_999)).toBe(false);
    expect(policy.shouldRequest(8_001)).toBe(true);
    // A 10-minute poll (the NOTIFY test) asks for four polls' worth.
    expect(createWakeupPolicy(600_000).windowMs).toBe(2_400_000);
  });
});
