import type { ResponseCache } from './response-cache.js';
import type { StoredResponse } from './stored-response.js';
import type { RedisGuard } from './redis-guard.js';

/**
 * Caches a committed response for replays. After the commit the answer is decided: a cache
 * failure only ends up in the Redis outage log (replays then read the database), and the
 * command timeout bounds how long it can delay the response.
 */
export async function cacheResponse(
  cache: ResponseCache,
  redis: RedisGuard,
  merchantId: string,
  key: string,
  stored: StoredResponse,
): Promise<void> {
  await redis.bestEffort('cache-set', () => cache.set(merchantId, key, stored));
}
