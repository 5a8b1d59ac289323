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

/**
 * The JSON stored under a cache key. Readable names cost a few bytes next to the response body;
 * the key carries a format version so entries written in an older format are plain misses.
 */
interface CachedResponse {
  /** Absent for a POST that created no payment (webhook endpoints, replays). */
  paymentId?: string;
  /** Absent for payments (and in entries written before refunds existed). */
  refundId?: string;
  fingerprint: string;
  status: number;
  body: string;
  expiresAtMs: number;
}

/** Bumped whenever CachedResponse changes shape (v1 was the one-letter {p,f,s,b,e}). */
const CACHE_FORMAT = 'v2';

export function createResponseCache(redis: Redis, prefix: string, now = Date.now): ResponseCache {
  // Merchant id first: one merchant's keys can never address another's (I6).
  const cacheKey = (merchantId: string, key: string) =>
    `${prefix}idem:resp:${CACHE_FORMAT}:${merchantId}:${key}`;
  return {
    async get(merchantId, key) {
      const raw = await redis.get(cacheKey(merchantId, key));
      if (raw === null) return null;
      const cached = JSON.parse(raw) as CachedResponse;
      if (cached.expiresAtMs <= now()) return null;
      return {
        ...(cached.paymentId === undefined ? {} : { paymentId: cached.paymentId }),
        ...(cached.refundId === undefined ? {} : { refundId: cached.refundId }),
        fingerprint: cached.fingerprint,
        status: cached.status,
        body: cached.body,
        expiresAt: new Date(cached.expiresAtMs),
      };
    },
    async set(merchantId, key, response) {
      const ttlMs = response.expiresAt.getTime() - now();
      if (ttlMs <= 0) return;
      const cached: CachedResponse = {
        ...(response.paymentId === undefined ? {} : { paymentId: response.paymentId }),
        ...(response.refundId === undefined ? {} : { refundId: response.refundId }),
        fingerprint: response.fingerprint,
        status: response.status,
        body: response.body,
        expiresAtMs: response.expiresAt.getTime(),
      };
      await redis.set(cacheKey(merchantId, key), JSON.stringify(cached), 'PX', ttlMs);
    },
  };
}
