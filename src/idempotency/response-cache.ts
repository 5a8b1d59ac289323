import type { Redis } from '../platform/redis.js';
import type { StoredResponse } from './stored-response.js';

/**
 * Redis cache of completed responses: a replay is answered without touching Postgres. It is a
 * cache only: a miss (flushed, evicted, Redis down) falls through to the database, which holds
 * the same record. Entries expire when the key does.
 */
export interface ResponseCache {
  get(merchantId: string, key: string): Promise<StoredResponse | null>;
  set(merchantId: string, key: string, response: StoredResponse): Promise<void>;
}

interface CachedValue {
  p: string;
  f: string;
  s: number;
  b: string;
  e: number;
}

export function createResponseCache(redis: Redis, prefix: string, now = Date.now): ResponseCache {
  // Merchant id first: one merchant's keys can never address another's (I6).
  const cacheKey = (merchantId: string, key: string) => `${prefix}idem:resp:${merchantId}:${key}`;
  return {
    async get(merchantId, key) {
      const raw = await redis.get(cacheKey(merchantId, key));
      if (raw === null) return null;
      const value = JSON.parse(raw) as CachedValue;
      if (value.e <= now()) return null;
      return {
        paymentId: value.p,
        fingerprint: value.f,
        status: value.s,
        body: value.b,
        expiresAt: new Date(value.e),
      };
    },
    async set(merchantId, key, response) {
      const ttlMs = response.expiresAt.getTime() - now();
      if (ttlMs <= 0) return;
      const value: CachedValue = {
        p: response.paymentId,
        f: response.fingerprint,
        s: response.status,
        b: response.body,
        e: response.expiresAt.getTime(),
      };
      await redis.set(cacheKey(merchantId, key), JSON.stringify(value), 'PX', ttlMs);
    },
  };
}
