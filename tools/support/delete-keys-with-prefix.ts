import { once } from 'node:events';
import { Cluster } from 'ioredis';
import type { Redis, RedisClient } from '../../src/platform/redis/redis.js';

/**
 * Deletes every key starting with `prefix` (SCAN + UNLINK in pages, never KEYS): what a
 * benchmark or a test file leaves in Redis. `redis` must be connected and have no keyPrefix of
 * its own: SCAN patterns ignore it. On a Cluster every master is scanned, and a page's keys are
 * unlinked one command each (they live in many slots).
 */
export async function deleteKeysWithPrefix(redis: RedisClient, prefix: string): Promise<void> {
  if (!(redis instanceof Cluster)) {
    await deleteOnNode(redis, prefix, (keys) => redis.unlink(...keys));
    return;
  }
  // A new Cluster client knows its masters once it has read the slot map.
  if (redis.status !== 'ready') await once(redis, 'ready');
  for (const node of redis.nodes('master')) {
    await deleteOnNode(node, prefix, (keys) => Promise.all(keys.map((key) => redis.unlink(key))));
  }
}

async function deleteOnNode(
  node: Redis,
  prefix: string,
  unlink: (keys: string[]) => Promise<unknown>,
): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await node.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1_000);
    cursor = next;
    if (keys.length > 0) await unlink(keys);
  } while (cursor !== '0');
}
