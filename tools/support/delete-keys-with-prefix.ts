import type { Redis } from '../../src/platform/redis/redis.js';

/**
 * Deletes every key starting with `prefix` (SCAN + UNLINK in pages, never KEYS): what a
 * benchmark or a test file leaves in Redis. `redis` must be connected and have no keyPrefix of
 * its own: SCAN patterns ignore it.
 */
export async function deleteKeysWithPrefix(redis: Redis, prefix: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1_000);
    cursor = next;
    if (keys.length > 0) await redis.unlink(...keys);
  } while (cursor !== '0');
}
