import { hashTag } from '../platform/redis/hash-tag.js';
import type { RedisClient } from '../platform/redis/redis.js';
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
 * Bumped whenever the entry's layout changes, so entries written in an older format are plain
 * misses (v1 was the one-letter JSON {p,f,s,b,e}, v2 readable JSON with the body escaped in it).
 */
const CACHE_FORMAT = 'v3';

/**
 * The cache key of (merchant, key); merchant id first: one merchant's keys never address
 * another's (I6). The merchant id is the Cluster hash tag, shared with the key's lock and the
 * merchant's rate-limit bucket (read in the same script).
 */
export function responseCacheKey(prefix: string, merchantId: string, key: string): string {
  return `${prefix}idem:resp:${CACHE_FORMAT}:${hashTag(merchantId)}:${key}`;
}

/**
 * One entry: a header line `<status> <expiresAtMs> <fingerprint> <paymentId> <refundId>` (an
 * absent id is empty; none of the fields can hold a space or a newline), a newline, then the
 * response body exactly as it is sent. A replay reads the header and slices the body off: the
 * body is never escaped into nor parsed out of JSON.
 */
export function encodeCachedResponse(response: StoredResponse): string {
  const expiresAtMs = response.expiresAt.getTime();
  const header = `${response.status} ${expiresAtMs} ${response.fingerprint} ${response.paymentId ?? ''} ${response.refundId ?? ''}`;
  return `${header}\n${response.body}`;
}

/** The entry as a stored response; null (a miss) when it has expired or is not this format. */
export function decodeCachedResponse(raw: string, nowMs: number): StoredResponse | null {
  const end = raw.indexOf('\n');
  if (end < 0) return null;
  const fields = raw.slice(0, end).split(' ');
  if (fields.length !== 5) return null;
  const [status, expiresAtMs, fingerprint = '', paymentId = '', refundId = ''] = fields;
  const expires = Number(expiresAtMs);
  const code = Number(status);
  if (!Number.isSafeInteger(expires) || expires <= nowMs) return null;
  if (!Number.isInteger(code) || fingerprint === '') return null;
  return {
    ...(paymentId === '' ? {} : { paymentId }),
    ...(refundId === '' ? {} : { refundId }),
    fingerprint,
    status: code,
    body: raw.slice(end + 1),
    expiresAt: new Date(expires),
  };
}

/** Milliseconds the entry should live in Redis; 0 or less: already expired, do not write it. */
export function cacheTtlMs(response: StoredResponse, nowMs: number): number {
  return response.expiresAt.getTime() - nowMs;
}

export function createResponseCache(
  redis: RedisClient,
  prefix: string,
  now = Date.now,
): ResponseCache {
  return {
    async get(merchantId, key) {
      const raw = await redis.get(responseCacheKey(prefix, merchantId, key));
      return raw === null ? null : decodeCachedResponse(raw, now());
    },
    async set(merchantId, key, response) {
      const ttlMs = cacheTtlMs(response, now());
      if (ttlMs <= 0) return;
      const value = encodeCachedResponse(response);
      await redis.set(responseCacheKey(prefix, merchantId, key), value, 'PX', ttlMs);
    },
  };
}
