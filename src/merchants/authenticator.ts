import type { Queryable } from '../platform/db.js';
import { findMerchantByApiKey, type Merchant } from './merchant-repository.js';

/** Enough for thousands of active merchants per process; beyond it the oldest entry goes. */
const MAX_CACHED_KEYS = 10_000;

export type Authenticate = (apiKey: string) => Promise<Merchant | null>;

/**
 * Resolves an API key to its merchant. Hits are cached in memory for `ttlMs` so a replay served
 * from Redis never touches Postgres; misses are not cached (a new key works at once).
 */
export function createAuthenticator(
  db: Queryable,
  ttlMs: number,
  now: () => number = Date.now,
): Authenticate {
  const cache = new Map<string, { merchant: Merchant; expiresAt: number }>();
  return async (apiKey) => {
    const cached = cache.get(apiKey);
    if (cached && cached.expiresAt > now()) return cached.merchant;
    const merchant = await findMerchantByApiKey(db, apiKey);
    cache.delete(apiKey);
    if (merchant && ttlMs > 0) {
      if (cache.size >= MAX_CACHED_KEYS) {
        const oldest = cache.keys().next();
        if (!oldest.done) cache.delete(oldest.value);
      }
      cache.set(apiKey, { merchant, expiresAt: now() + ttlMs });
    }
    return merchant;
  };
}
