import { randomUUID } from 'node:crypto';
import type { Redis } from '../platform/redis.js';
import { redisScript } from '../platform/redis-script.js';
import type { RedisGuard } from './redis-guard.js';
import {
  cacheTtlMs,
  decodeCachedResponse,
  encodeCachedResponse,
  responseCacheKey,
} from './response-cache.js';
import type { StoredResponse } from './stored-response.js';

/** A lock this request holds: `complete` caches the response and releases, in one command. */
export interface HeldLock {
  /** Deletes the lock and the in-flight marker if they are still this request's; never rejects. */
  release(): Promise<void>;
  /** Caches the response, then releases as `release` does; one command, applied atomically. */
  complete(response: StoredResponse): Promise<void>;
}

export type LockAttempt =
  | ({ kind: 'acquired' } & HeldLock)
  /** Another request holds the key; its fingerprint, when known, lets a mismatch win (422). */
  | { kind: 'held'; holderFingerprint: string | null };

/** What one claim finds: the cached response, or else the lock attempt's outcome. */
export type ClaimAttempt = LockAttempt | { kind: 'cached'; response: StoredResponse };

export interface KeyLocks {
  /** Takes the key's lock (no cache read). Rejects when Redis fails. */
  acquire(merchantId: string, key: string, fingerprint: string): Promise<LockAttempt>;
  /** The cached response if there is one, else `acquire`, in one round trip. Rejects when Redis fails. */
  claim(merchantId: string, key: string, fingerprint: string): Promise<ClaimAttempt>;
}

/**
 * Takes the lock unless it exists; on success the in-flight marker (the holder's request
 * fingerprint) is set with it, so a concurrent request with a different body gets 422 rather than
 * 409. Held: answers the holder's fingerprint. KEYS: lock, in-flight; ARGV: token, ttl, fingerprint.
 */
const LOCK = `
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  redis.call('SET', KEYS[2], ARGV[3], 'PX', ARGV[2])
  return {'acquired'}
end
return {'held', redis.call('GET', KEYS[2])}
`;

/** The cached response, else LOCK. KEYS: response, lock, in-flight; ARGV as LOCK's. */
const CLAIM = `
local cached = redis.call('GET', KEYS[1])
if cached then return {'cached', cached} end
if redis.call('SET', KEYS[2], ARGV[1], 'NX', 'PX', ARGV[2]) then
  redis.call('SET', KEYS[3], ARGV[3], 'PX', ARGV[2])
  return {'acquired'}
end
return {'held', redis.call('GET', KEYS[3])}
`;

/** Deletes lock and in-flight marker only while the lock holds this token. KEYS: lock, in-flight; ARGV: token. */
const RELEASE = `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1], KEYS[2])
end
return 0
`;

/**
 * Caches the response (when its TTL is positive), then RELEASE: no request can see the key
 * unlocked before its response is cached. KEYS: response, lock, in-flight; ARGV: token, entry, ttl.
 */
const COMPLETE = `
if tonumber(ARGV[3]) > 0 then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
end
if redis.call('GET', KEYS[2]) == ARGV[1] then
  return redis.call('DEL', KEYS[2], KEYS[3])
end
return 0
`;

const lockScript = redisScript(LOCK);
const claimScript = redisScript(CLAIM);
const releaseScript = redisScript(RELEASE);
const completeScript = redisScript(COMPLETE);

/**
 * A lock per (merchant, key) with the semantics Redlock has on one Redis (a random token, a TTL,
 * a release that deletes only its own token), in scripts of this module so that the cache check
 * and the lock are one command, and the cache write and the release another. It spares the
 * database a storm of duplicates; it does not guard correctness (no fencing token, it can expire
 * mid-request): the UNIQUE constraint does (DESIGN 13). No retries: a held lock is answered at
 * once (409 or the bounded wait), not spun on.
 */
export function createKeyLocks(
  redis: Redis,
  prefix: string,
  ttlMs: number,
  now: () => number = Date.now,
): KeyLocks {
  const lockKey = (merchantId: string, key: string) => `${prefix}idem:lock:${merchantId}:${key}`;
  const inFlightKey = (merchantId: string, key: string) =>
    `${prefix}idem:inflight:${merchantId}:${key}`;

  const held = (merchantId: string, key: string, token: string): HeldLock => {
    const lock = lockKey(merchantId, key);
    const inFlight = inFlightKey(merchantId, key);
    return {
      // Swallows its errors, as Redlock's release did: a lock left behind expires on its own.
      release: async () => {
        await releaseScript.run(redis, [lock, inFlight], [token]).catch(() => null);
      },
      complete: async (response) => {
        const cacheKey = responseCacheKey(prefix, merchantId, key);
        const ttl = Math.max(0, cacheTtlMs(response, now()));
        const entry = encodeCachedResponse(response);
        await completeScript.run(redis, [cacheKey, lock, inFlight], [token, entry, ttl]);
      },
    };
  };

  const lockOutcome = (
    reply: unknown,
    merchantId: string,
    key: string,
    token: string,
  ): LockAttempt => {
    const [kind, value] = reply as [string, string | null | undefined];
    if (kind === 'acquired') return { kind: 'acquired', ...held(merchantId, key, token) };
    return { kind: 'held', holderFingerprint: value ?? null };
  };

  const acquire = async (merchantId: string, key: string, fingerprint: string) => {
    const token = randomUUID();
    const keys = [lockKey(merchantId, key), inFlightKey(merchantId, key)];
    const reply = await lockScript.run(redis, keys, [token, ttlMs, fingerprint]);
    return lockOutcome(reply, merchantId, key, token);
  };

  return {
    acquire,
    async claim(merchantId, key, fingerprint) {
      const token = randomUUID();
      const keys = [
        responseCacheKey(prefix, merchantId, key),
        lockKey(merchantId, key),
        inFlightKey(merchantId, key),
      ];
      const reply = await claimScript.run(redis, keys, [token, ttlMs, fingerprint]);
      const [kind, value] = reply as [string, string | null | undefined];
      if (kind !== 'cached') return lockOutcome(reply, merchantId, key, token);
      const response = decodeCachedResponse(value ?? '', now());
      // Expired in its last millisecond, or an entry this version cannot read: a miss.
      return response ? { kind: 'cached', response } : acquire(merchantId, key, fingerprint);
    },
  };
}

export type KeyLockResult =
  /** Another request holds the key; its fingerprint, when known. */
  | { kind: 'held'; holderFingerprint: string | null }
  /**
   * This request may write: with the lock, or without it when Redis is down and failing open.
   * `release` is safe to call more than once and does nothing when no lock was taken.
   */
  | { kind: 'free'; release: () => Promise<void> };

/** Takes the lock on (merchant, key); a Redis failure goes through the guard. */
export async function acquireKeyLock(
  locks: KeyLocks,
  redis: RedisGuard,
  merchantId: string,
  key: string,
  fingerprintHex: string,
): Promise<KeyLockResult> {
  const lock = await redis.attempt('lock', () => locks.acquire(merchantId, key, fingerprintHex));
  if (lock?.kind === 'held') return lock;
  if (lock?.kind !== 'acquired') return { kind: 'free', release: () => Promise.resolve() };
  let released = false;
  return {
    kind: 'free',
    release: async () => {
      if (released) return;
      released = true;
      await lock.release();
    },
  };
}
