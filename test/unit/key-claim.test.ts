import { describe, expect, it } from 'vitest';
import { IdempotencyCacheUnavailable } from '../../src/idempotency/idempotency-errors.js';
import { claimKey } from '../../src/idempotency/key-claim.js';
import type { KeyLocks } from '../../src/idempotency/key-lock.js';
import { createRedisGuard } from '../../src/idempotency/redis-guard.js';
import { encodeCachedResponse, type ResponseCache } from '../../src/idempotency/response-cache.js';
import type { StoredResponse } from '../../src/idempotency/stored-response.js';
import type { OutageLog } from '../../src/platform/resilience/outage-log.js';

const stored: StoredResponse = {
  paymentId: '0190a6e2-7f6a-7d3c-8a4b-123456789abc',
  fingerprint: 'ef'.repeat(32),
  status: 202,
  body: '{"id":"0190a6e2-7f6a-7d3c-8a4b-123456789abc"}',
  expiresAt: new Date(Date.now() + 60_000),
};
const quietOutage: OutageLog = { down: false, failed: () => undefined, succeeded: () => undefined };
const guard = (failClosed: boolean) =>
  createRedisGuard({ failClosed, retryAfterSeconds: 2, cooldownMs: 60_000, outage: quietOutage });

/** KeyLocks and a ResponseCache that count their Redis commands; `fail` makes them reject. */
function fakes(fail = false) {
  const calls = { claim: 0, complete: 0, release: 0, cacheSet: 0 };
  const maybeFail = () => (fail ? Promise.reject(new Error('Command timed out')) : undefined);
  const locks: KeyLocks = {
    acquire: () => Promise.reject(new Error('not used')),
    claim: async () => {
      calls.claim++;
      await maybeFail();
      return {
        kind: 'acquired',
        complete: () => {
          calls.complete++;
          return Promise.resolve();
        },
        release: () => {
          calls.release++;
          return Promise.resolve();
        },
      };
    },
  };
  const cache: ResponseCache = {
    get: () => Promise.resolve(null),
    set: () => {
      calls.cacheSet++;
      return Promise.resolve();
    },
  };
  return { calls, locks, cache };
}

describe('claiming a key', () => {
  it('when the gate peeked a cached response, then it is the answer without another Redis command', async () => {
    const { calls, locks, cache } = fakes();
    const peeked = encodeCachedResponse(stored);
    const claim = await claimKey(locks, cache, guard(false), 'm', 'k', 'ab', peeked);
    expect(claim).toEqual({ kind: 'cached', response: stored });
    expect(calls.claim).toBe(0);
  });

  it('when the gate peeked a miss, then the claim asks Redis again (a twin may have finished since)', async () => {
    const { calls, locks, cache } = fakes();
    const claim = await claimKey(locks, cache, guard(false), 'm', 'k', 'ab', null);
    expect(claim.kind).toBe('free');
    expect(calls.claim).toBe(1);
  });

  it('when Redis is being skipped and the mode is closed, then even a peeked hit is refused as before', async () => {
    const failing = fakes(true);
    const closed = guard(true);
    await expect(
      claimKey(failing.locks, failing.cache, closed, 'm', 'k', 'ab'),
    ).rejects.toBeInstanceOf(IdempotencyCacheUnavailable);
    const { locks, cache } = fakes();
    await expect(
      claimKey(locks, cache, closed, 'm', 'k', 'ab', encodeCachedResponse(stored)),
    ).rejects.toBeInstanceOf(IdempotencyCacheUnavailable);
  });

  it('when Redis fails and the mode is open, then the request writes without a lock and caches after', async () => {
    const { calls, locks, cache } = fakes(true);
    const claim = await claimKey(locks, cache, guard(false), 'm', 'k', 'ab');
    if (claim.kind !== 'free') throw new Error(claim.kind);
    await claim.complete(stored);
    expect(calls.cacheSet).toBe(0); // skipped: the breaker is open after the failed claim
  });

  it('when the holder completes, then the release after it does nothing (one command, once)', async () => {
    const { calls, locks, cache } = fakes();
    const claim = await claimKey(locks, cache, guard(false), 'm', 'k', 'ab');
    if (claim.kind !== 'free') throw new Error(claim.kind);
    await claim.complete(stored);
    await claim.release();
    await claim.complete(stored);
    expect(calls).toMatchObject({ complete: 1, release: 0 });
  });
});
