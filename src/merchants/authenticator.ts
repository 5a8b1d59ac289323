import type { Queryable } from '../platform/database/db.js';
import { isWellFormedApiKey } from './api-key.js';
import { findMerchantByApiKey, type KeyHolder } from './merchant-repository.js';

/** Enough for thousands of active merchants per process; beyond it the oldest entry goes. */
const MAX_CACHED_KEYS = 10_000;
/** A key-guessing client fills this quickly; bounded so it cannot grow the heap without end. */
const MAX_CACHED_UNKNOWN_KEYS = 10_000;

export interface Authenticator {
  /**
   * The merchant of a live key with the key's scopes, or null; answers from memory while the
   * key is cached, and without any lookup for a string that is not shaped like a key.
   */
  authenticate: (apiKey: string) => Promise<KeyHolder | null>;
  /** True when `apiKey` would be answered from memory (no database work). */
  isCached: (apiKey: string) => boolean;
}

/**
 * Resolves an API key to its merchant (and tier) and the key's scopes. Hits are cached for `ttlMs`, never past the
 * key's own expiry, so a revoked key stops working on every replica within `ttlMs` and a replay
 * served from Redis never touches Postgres. Unknown keys are cached for `negativeTtlMs`, so a
 * client repeating a wrong key costs one lookup per interval, not one per request. A string
 * that is not shaped like an issued key is refused before any of it: it costs nothing.
 */
export function createAuthenticator(
  db: Queryable,
  ttlMs: number,
  negativeTtlMs: number,
  now: () => number = Date.now,
): Authenticator {
  const known = new Map<string, { merchant: KeyHolder; expiresAt: number }>();
  const unknown = new Map<string, number>();

  const lookup = (apiKey: string): KeyHolder | null | undefined => {
    const hit = known.get(apiKey);
    if (hit && hit.expiresAt > now()) return hit.merchant;
    const miss = unknown.get(apiKey);
    if (miss !== undefined && miss > now()) return null;
    return undefined;
  };

  return {
    isCached: (apiKey) => lookup(apiKey) !== undefined,
    authenticate: async (apiKey) => {
      const cached = lookup(apiKey);
      if (cached !== undefined) return cached;
      if (!isWellFormedApiKey(apiKey)) return null;
      const found = await findMerchantByApiKey(db, apiKey);
      known.delete(apiKey);
      unknown.delete(apiKey);
      if (!found) {
        if (negativeTtlMs > 0)
          remember(unknown, apiKey, now() + negativeTtlMs, MAX_CACHED_UNKNOWN_KEYS);
        return null;
      }
      const { keyExpiresAt, ...merchant } = found;
      const expiresAt = Math.min(now() + ttlMs, keyExpiresAt?.getTime() ?? Infinity);
      if (ttlMs > 0) remember(known, apiKey, { merchant, expiresAt }, MAX_CACHED_KEYS);
      return merchant;
    },
  };
}

/** Map insertion order is age order: at the bound, the oldest entry makes room. */
function remember<V>(cache: Map<string, V>, key: string, value: V, max: number): void {
  if (cache.size >= max) {
    const oldest = cache.keys().next();
    if (!oldest.done) cache.delete(oldest.value);
  }
  cache.set(key, value);
}
