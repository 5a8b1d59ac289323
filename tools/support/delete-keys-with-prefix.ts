import { Cluster } from 'ioredis';
import type { RedisClient } from '../../src/platform/redis/redis.js';
import { scanKeys } from './scan-keys.js';

/**
 * Deletes every key starting with `prefix` (SCAN + UNLINK in pages, never KEYS): what a
 * benchmark or a test file leaves in Redis. `redis` must be connected and have no keyPrefix of
 * its own: SCAN patterns ignore it. On a Cluster a page's keys are unlinked one command each
 * (they live in many slots).
 */
export async function deleteKeysWithPrefix(redis: RedisClient, prefix: string): Promise<void> {
  await scanKeys(redis, prefix, (keys) =>
    redis instanceof Cluster
      ? Promise.all(keys.map((key) => redis.unlink(key)))
      : redis.unlink(...keys),
  );
}
