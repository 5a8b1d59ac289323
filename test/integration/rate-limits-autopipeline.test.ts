import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createOutageLog } from '../../src/platform/resilience/outage-log.js';
import { closeRedis, createRedis, type RedisClient } from '../../src/platform/redis/redis.js';
import { createRateLimit, rateBucketKey } from '../../src/rate-limits/rate-limiter.js';
import { capturedLogger } from '../support/captured-logger.js';
import { deleteKeysWithPrefix, uniqueSuffix } from '../support/isolation.js';

// The process's Redis client pipelines the commands of one tick (enableAutoPipelining). A
// pipeline knows the scripts defined on the client when it was opened, so a token-bucket script
// first defined while a pipeline was open (a tier's limiter made on its first request, in the
// tick a cache read went out) was missing from it: the call threw "pipeline[functionName] is not
// a function" and ioredis then crashed the process ("results[i] is not iterable"; an API
// replaced by the chaos run's rolling restart died 0.1 s after ready).

let redis: RedisClient;
const prefix = `test:${uniqueSuffix()}:`;

beforeAll(async () => {
  const { logger } = capturedLogger();
  const { redisUrl, redisClusterNodes, redisTlsCaFile } = inject('services');
  redis = createRedis(
    {
      REDIS_URL: redisUrl,
      REDIS_COMMAND_TIMEOUT_MS: 2_000,
      REDIS_CLUSTER_NODES: redisClusterNodes?.split(','),
      REDIS_TLS_CA_FILE: redisTlsCaFile,
    },
    logger,
  );
  await redis.connect();
});

afterAll(async () => {
  await deleteKeysWithPrefix(redis, prefix);
  await closeRedis(redis);
});

describe('rate limits on the auto-pipelining client', () => {
  it('when a policy is first used in the same tick as another command, then Redis counts it', async () => {
    const { logger, lines } = capturedLogger();
    const outage = createOutageLog('redis', logger, 60_000);
    const rateLimit = createRateLimit(redis, { keyPrefix: prefix, timeoutMs: 2_000, outage });
    const policies = [1, 2, 3].map((n) => ({ name: `tier${n}`, ratePerSecond: 1, burst: 5 }));

    // One tick: a read opens the pipeline, then three policies' limiters are made and used.
    const read = redis.get(`${prefix}anything`);
    const decisions = await Promise.all(
      policies.map((policy) => rateLimit('merchant', 'm1', policy)),
    );
    await read;

    // Counted in Redis (not by the per-process fallback): the buckets exist there.
    for (const policy of policies) {
      const tokens = await redis.hget(
        rateBucketKey(prefix, 'merchant', policy.name, 'm1'),
        'tokens',
      );
      expect(Number(tokens)).toBe(4);
    }
    expect(decisions.map((d) => d.remaining)).toEqual([4, 4, 4]);
    expect(lines.filter((line) => line.level === 40 || line.level === 50)).toEqual([]);
  });
});
