import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { responseCacheKey } from '../../src/idempotency/response-cache.js';
import type { RedisClient } from '../../src/platform/redis/redis.js';
import { createLogger } from '../../src/platform/telemetry/logger.js';
import { createOutageLog } from '../../src/platform/resilience/outage-log.js';
import { createRateLimiter, type RatePolicy } from '../../src/rate-limits/rate-limiter.js';
import { deleteKeysWithPrefix, uniqueSuffix } from '../support/isolation.js';
import { testRedisClient } from '../support/test-redis-client.js';

const silent = createLogger({ LOG_LEVEL: 'silent', LOG_FORMAT: 'json' });
const prefix = `test:${uniqueSuffix()}:`;
// Two at once, then one every 10 s: nothing refills during the test.
const policy: RatePolicy = { name: 'peek-test', ratePerSecond: 0.1, burst: 2 };
/** A merchant's cached response (what the API peeks): in its merchant's hash-tag slot. */
const cached = (merchant: string, key: string) => responseCacheKey(prefix, merchant, key);
let redis: RedisClient;
beforeAll(() => {
  redis = testRedisClient();
});
afterAll(async () => {
  await deleteKeysWithPrefix(redis, prefix);
  redis.disconnect();
});

const limiterOn = (client: RedisClient) =>
  createRateLimiter(client, {
    keyPrefix: prefix,
    timeoutMs: 500,
    outage: createOutageLog('redis', silent, 60_000),
  });

describe('rate limit and peek (one Redis command)', () => {
  it('when the request is allowed, then the peeked key is read with it; refused, nothing is read', async () => {
    await redis.set(cached('m1', 'peeked'), 'the cached entry');
    const limiter = limiterOn(redis);
    const first = await limiter.limitAndPeek('merchant', 'm1', policy, cached('m1', 'peeked'));
    expect(first).toMatchObject({ allowed: true, remaining: 1, peeked: 'the cached entry' });
    const absent = await limiter.limitAndPeek('merchant', 'm1', policy, cached('m1', 'absent'));
    expect(absent).toMatchObject({ allowed: true, remaining: 0, peeked: null });
    const refused = await limiter.limitAndPeek('merchant', 'm1', policy, cached('m1', 'peeked'));
    expect(refused).toMatchObject({ allowed: false, remaining: 0, peeked: null });
    expect(refused.retryAfterSeconds).toBeGreaterThanOrEqual(1);
    expect(refused.resetSeconds).toBe(20); // a full refill of the burst: 2 at 0.1/s
  });

  it('when a plain limit and a peek spend the same merchant, then they share one bucket', async () => {
    const limiter = limiterOn(redis);
    expect((await limiter.limit('merchant', 'm2', policy)).remaining).toBe(1);
    const peek = await limiter.limitAndPeek('merchant', 'm2', policy, cached('m2', 'absent'));
    expect(peek).toMatchObject({ allowed: true, remaining: 0 });
    expect((await limiter.limit('merchant', 'm2', policy)).allowed).toBe(false);
    // A cost of 0 reads the bucket without spending.
    expect(await limiter.limit('merchant', 'm2', policy, 0)).toMatchObject({ remaining: 0 });
  });

  it('when Redis is not connected, then the process limits on its own and peeks nothing', async () => {
    const away = new Redis(inject('services').redisUrl, { lazyConnect: true });
    try {
      const limiter = limiterOn(away);
      for (const remaining of [1, 0]) {
        const decision = await limiter.limitAndPeek(
          'merchant',
          'm3',
          policy,
          cached('m3', 'peeked'),
        );
        expect(decision).toMatchObject({ allowed: true, remaining, peeked: null });
      }
      const refused = await limiter.limitAndPeek('merchant', 'm3', policy, cached('m3', 'peeked'));
      expect(refused).toMatchObject({ allowed: false, peeked: null });
    } finally {
      away.disconnect();
    }
  });
});
