import { once } from 'node:events';
import { Cluster } from 'ioredis';
import type { RedisClient } from '../../src/platform/redis/redis.js';

/**
 * Calls `onPage` with each page of the keys starting with `prefix` (SCAN in pages of ~1,000, never
 * KEYS). `redis` must have no keyPrefix of its own: SCAN patterns ignore it. On a Cluster every
 * master is scanned (SCAN sees one node's keys); a page's keys may then live in several slots,
 * so `onPage` sends one command per key where it writes.
 */
export async function scanKeys(
  redis: RedisClient,
  prefix: string,
  onPage: (keys: string[]) => Promise<unknown>,
): Promise<void> {
  if (!(redis instanceof Cluster)) return scanNode(redis, prefix, onPage);
  // A new Cluster client knows its masters once it has read the slot map.
  if (redis.status !== 'ready') await once(redis, 'ready');
  for (const node of redis.nodes('master')) await scanNode(node, prefix, onPage);
}

async function scanNode(
  node: Exclude<RedisClient, Cluster>,
  prefix: string,
  onPage: (keys: string[]) => Promise<unknown>,
): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await node.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1_000);
    cursor = next;
    if (keys.length > 0) await onPage(keys);
  } while (cursor !== '0');
}
