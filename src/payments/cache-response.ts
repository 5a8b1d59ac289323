import type { ResponseCache } from '../idempotency/response-cache.js';
import type { StoredResponse } from '../idempotency/stored-response.js';
import type { Logger } from '../platform/logger.js';

/**
 * Caches a committed response for replays. After the commit the answer is decided: a cache
 * failure is logged (replays then read the database), never turned into an error.
 */
export async function cacheResponse(
  cache: ResponseCache,
  logger: Logger,
  merchantId: string,
  key: string,
  stored: StoredResponse,
): Promise<void> {
  await cache.set(merchantId, key, stored).catch((error: unknown) => {
    logger.warn({ err: error }, 'could not cache the response; replays will use the database');
  });
}
