import type { KeyLocks } from './key-lock.js';
import type { RedisGuard } from './redis-guard.js';
import { decodeCachedResponse, type ResponseCache } from './response-cache.js';
import type { StoredResponse } from './stored-response.js';

export type KeyClaim =
  /** The key's response is cached: the request is a replay (or a reused key). */
  | { kind: 'cached'; response: StoredResponse }
  /** Another request holds the key; its fingerprint, when known. */
  | { kind: 'held'; holderFingerprint: string | null }
  /**
   * This request may write: with the lock, or without it when Redis is down and failing open.
   * After the commit, `complete` caches the response and releases the lock in one command; a
   * request that wrote nothing calls `release`. Whichever comes first is the only one that acts:
   * both are safe to call again, and neither ever throws.
   */
  | {
      kind: 'free';
      complete: (response: StoredResponse) => Promise<void>;
      release: () => Promise<void>;
    };

/**
 * The cache check and the key's lock in one Redis command (KeyLocks.claim): a replay costs one
 * round trip, a new request one before its write and one after (cache write + release). A Redis
 * failure goes through the guard exactly as the separate steps did: failing open, the request
 * writes without a lock and its response is cached if Redis is back by then; failing closed, it
 * is refused (IdempotencyCacheUnavailable). Step names: `claim`, then `cache-set` or `release`.
 *
 * `peeked`: the raw cache entry already read with the rate limit (the merchant gate's
 * `res.locals.peekedResponse`); a hit is the answer without another command, still through the
 * guard, so a breaker that skips Redis (or refuses, failing closed) does what it did before.
 * A miss is not trusted (the twin may have finished since): the claim reads the cache again.
 */
export async function claimKey(
  locks: KeyLocks,
  cache: ResponseCache,
  redis: RedisGuard,
  merchantId: string,
  key: string,
  fingerprintHex: string,
  peeked?: string | null,
): Promise<KeyClaim> {
  const hit = peeked ? decodeCachedResponse(peeked, Date.now()) : null;
  const claim = await redis.attempt('claim', () =>
    hit
      ? Promise.resolve({ kind: 'cached' as const, response: hit })
      : locks.claim(merchantId, key, fingerprintHex),
  );
  if (claim?.kind === 'cached' || claim?.kind === 'held') return claim;
  let finished: Promise<void> | undefined;
  if (claim?.kind !== 'acquired') {
    return {
      kind: 'free',
      complete: (response) =>
        (finished ??= redis.bestEffort('cache-set', () => cache.set(merchantId, key, response))),
      release: () => (finished ??= Promise.resolve()),
    };
  }
  return {
    kind: 'free',
    complete: (response) =>
      (finished ??= redis.bestEffort('cache-set', () => claim.complete(response))),
    release: () => (finished ??= redis.bestEffort('release', () => claim.release())),
  };
}
