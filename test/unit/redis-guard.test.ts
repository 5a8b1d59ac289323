import { describe, expect, it } from 'vitest';
import type { OutageLog } from '../../src/platform/resilience/outage-log.js';
import { IdempotencyCacheUnavailable } from '../../src/idempotency/idempotency-errors.js';
import { createRedisGuard } from '../../src/idempotency/redis-guard.js';

function outageSpy(): OutageLog & { failures: number; successes: number } {
  return {
    failures: 0,
    successes: 0,
    down: false,
    failed() {
      this.failures++;
    },
    succeeded() {
      this.successes++;
    },
  };
}

const timedOut = () => Promise.reject(new Error('Command timed out'));

describe('redis guard', () => {
  it('when a Redis step fails, then Redis is skipped for the cooldown, then one probe closes the breaker', async () => {
    let now = 0;
    const outage = outageSpy();
    const guard = createRedisGuard({
      failClosed: false,
      retryAfterSeconds: 2,
      cooldownMs: 1_000,
      outage,
      now: () => now,
    });
    await expect(guard.attempt('cache-get', timedOut)).resolves.toBeUndefined();
    expect(outage.failures).toBe(1);

    let calls = 0;
    const works = () => {
      calls++;
      return Promise.resolve('value');
    };
    now = 500;
    expect(await guard.attempt('cache-get', works)).toBeUndefined();
    await guard.bestEffort('cache-set', works);
    expect(calls).toBe(0);

    now = 1_000;
    expect(await guard.attempt('cache-get', works)).toBe('value');
    expect(await guard.attempt('lock', works)).toBe('value');
    expect(calls).toBe(2);
    expect(outage.successes).toBe(2);
  });

  it('when failing closed, then a failure and a skipped step both refuse with 503, but a post-commit step never throws', async () => {
    let now = 0;
    const guard = createRedisGuard({
      failClosed: true,
      retryAfterSeconds: 2,
      cooldownMs: 1_000,
      outage: outageSpy(),
      now: () => now,
    });
    await expect(guard.attempt('cache-get', timedOut)).rejects.toBeInstanceOf(
      IdempotencyCacheUnavailable,
    );
    now = 10;
    await expect(guard.attempt('cache-get', () => Promise.resolve(1))).rejects.toBeInstanceOf(
      IdempotencyCacheUnavailable,
    );
    now = 2_000;
    await expect(guard.bestEffort('cache-set', timedOut)).resolves.toBeUndefined();
  });
});
