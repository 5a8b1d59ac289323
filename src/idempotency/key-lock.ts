import { createHash } from 'node:crypto';
import Redlock, { ExecutionError, ResourceLockedError, type Lock } from 'redlock';
import { hashTag } from '../platform/redis/hash-tag.js';
import type { RedisClient } from '../platform/redis/redis.js';
import { redisScript } from '../platform/redis/redis-script.js';
import { redlockClient } from './redlock-client.js';
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
  /**
   * `acquire`, refused when the response is cached: one round trip when the lock is taken, a
   * second to tell a cached response from a holder when it is not. Rejects when Redis fails.
   */
  claim(merchantId: string, key: string, fingerprint: string): Promise<ClaimAttempt>;
}

/*
 * Redlock's three scripts, replaced through its constructor's `scripts` hook. Redlock sends
 * KEYS = the lock's resources and ARGV = [lock value, duration ms], and counts a result equal to
 * the number of resources as success. Our resources are [lock, in-flight marker, request
 * fingerprint] and, for a claim, the response cache key: the fingerprint is data carried in KEYS,
 * because Redlock's ARGV has no room for it; like every other entry it carries the merchant's
 * hash tag, so a Redis Cluster routes the script to one slot (DESIGN 123). It goes as a
 * name under the API's key patterns (fingerprintCarrier), which the API's Redis user is allowed
 * (a KEYS entry is checked against the ACL even when never used as a key), and the script keeps
 * what follows its last colon: the hex fingerprint.
 */

/**
 * No lock while the response is cached (when a cache key is given) or the lock exists; else the
 * lock and, in the same script, the in-flight marker holding the fingerprint. All or nothing.
 */
const ACQUIRE = `
if KEYS[4] and redis.call('EXISTS', KEYS[4]) == 1 then return 0 end
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  redis.call('SET', KEYS[2], string.match(KEYS[3], '[^:]*$'), 'PX', ARGV[2])
  return #KEYS
end
return 0
`;

/** Extends lock and marker while the lock holds this value (unused today; Redlock's default would SET every resource). */
const EXTEND = `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  redis.call('PEXPIRE', KEYS[2], ARGV[2])
  return #KEYS
end
return 0
`;

/** Deletes lock and marker only while the lock holds this value. */
const RELEASE = `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1], KEYS[2])
  return #KEYS
end
return 0
`;

/** After a refused acquire, which it was: the cached response, else the holder's fingerprint. KEYS: response, in-flight. */
const INSPECT = `
local cached = redis.call('GET', KEYS[1])
if cached then return {'cached', cached} end
return {'held', redis.call('GET', KEYS[2])}
`;

/**
 * Caches the response (when its TTL is positive), then RELEASE for the Redlock lock's value: no
 * request can see the key unlocked before its response is cached. Redlock has no way to carry a
 * response, so this one is sent directly. KEYS: response, lock, in-flight; ARGV: value, entry, ttl.
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

const inspectScript = redisScript(INSPECT);
const completeScript = redisScript(COMPLETE);
const sha1 = (source: string) => createHash('sha1').update(source).digest('hex');

const ignoreVotes = (): void => undefined;

/** Redlock on the one Redis client, with the scripts above, no retries and no error noise. */
export function createKeyRedlock(redis: RedisClient): Redlock {
  const client = redlockClient(redis, {
    acquireSha: sha1(ACQUIRE),
    acquireSource: ACQUIRE,
    releaseSha: sha1(RELEASE),
    releaseSource: RELEASE,
  });
  const redlock = new Redlock(
    [client],
    // retryCount 0: a held key is answered at once (409 or the bounded wait), never spun on.
    { retryCount: 0, driftFactor: 0.01 },
    // As functions: 5.0.0-beta.2 types a plain string too but ignores it (only a function is
    // applied), which would leave its default scripts in place. key-lock-redlock.test checks they are ours.
    { acquireScript: () => ACQUIRE, extendScript: () => EXTEND, releaseScript: () => RELEASE },
  );
  // Redlock emits every failed vote. A refused acquire (ResourceLockedError) comes with every
  // held or cached key: not an error. Any other error also rejects the call that met it, and the
  // RedisGuard records it there (outage log, breaker, fail open or closed): nothing to do here.
  redlock.on('error', ignoreVotes);
  return redlock;
}

/**
 * Redlock's lock, or null when the acquire was refused (the key is held or cached). A Redis
 * failure rejects with the client's own error (a refused connection, a command timeout), for the
 * guard to see.
 */
async function tryAcquire(redlock: Redlock, resources: string[], ttlMs: number) {
  try {
    return await redlock.acquire(resources, ttlMs);
  } catch (error) {
    if (!(error instanceof ExecutionError)) throw error;
    const votes = await Promise.all(error.attempts);
    const causes = votes.flatMap((stats) => [...stats.votesAgainst.values()]);
    const failure = causes.find((cause) => !(cause instanceof ResourceLockedError));
    if (failure || causes.length === 0) throw failure ?? error;
    return null;
  }
}

/** The Redis key of (merchant, key)'s lock (the merchant id is the hash tag). */
export function keyLockKey(prefix: string, merchantId: string, key: string): string {
  return `${prefix}idem:lock:${hashTag(merchantId)}:${key}`;
}

/** A request fingerprint as a KEYS entry (never a key: data for ACQUIRE, see above). */
export function fingerprintCarrier(
  prefix: string,
  merchantId: string,
  fingerprint: string,
): string {
  return `${prefix}idem:fp:${hashTag(merchantId)}:${fingerprint}`;
}

/** The Redis key of (merchant, key)'s in-flight marker (the holder's fingerprint). */
export function inFlightMarkerKey(prefix: string, merchantId: string, key: string): string {
  return `${prefix}idem:inflight:${hashTag(merchantId)}:${key}`;
}

/**
 * A lock per (merchant, key), taken and held by Redlock (a random value, a TTL, a release that
 * deletes only its own value) on the one Redis. Its acquire script also sets the in-flight marker
 * and, for a claim, refuses when the response is cached: a new request takes the lock in one
 * command, and the cache write plus the release is one more (COMPLETE). A refused claim costs a
 * second command (INSPECT) to tell a cached response from a holder. It spares the database a
 * storm of duplicates; it does not guard correctness (no fencing token, it can expire
 * mid-request): the UNIQUE constraint does (DESIGN 13). No retries.
 */
export function createKeyLocks(
  redis: RedisClient,
  prefix: string,
  ttlMs: number,
  now: () => number = Date.now,
  redlock: Redlock = createKeyRedlock(redis),
): KeyLocks {
  const lockKey = (merchantId: string, key: string) => keyLockKey(prefix, merchantId, key);
  const inFlightKey = (merchantId: string, key: string) =>
    inFlightMarkerKey(prefix, merchantId, key);

  const held = (merchantId: string, key: string, lock: Lock): HeldLock => ({
    // Swallows its errors, as it always did: a lock left behind expires on its own.
    release: async () => {
      await redlock.release(lock).catch(() => null);
    },
    complete: async (response) => {
      const keys = [
        responseCacheKey(prefix, merchantId, key),
        lockKey(merchantId, key),
        inFlightKey(merchantId, key),
      ];
      const ttl = Math.max(0, cacheTtlMs(response, now()));
      await completeScript.run(redis, keys, [lock.value, encodeCachedResponse(response), ttl]);
    },
  });

  const acquire = async (
    merchantId: string,
    key: string,
    fingerprint: string,
  ): Promise<LockAttempt> => {
    const inFlight = inFlightKey(merchantId, key);
    const lock = await tryAcquire(
      redlock,
      [lockKey(merchantId, key), inFlight, fingerprintCarrier(prefix, merchantId, fingerprint)],
      ttlMs,
    );
    if (lock) return { kind: 'acquired', ...held(merchantId, key, lock) };
    return { kind: 'held', holderFingerprint: await redis.get(inFlight) };
  };

  return {
    acquire,
    async claim(merchantId, key, fingerprint) {
      const cacheKey = responseCacheKey(prefix, merchantId, key);
      const inFlight = inFlightKey(merchantId, key);
      const resources = [
        lockKey(merchantId, key),
        inFlight,
        fingerprintCarrier(prefix, merchantId, fingerprint),
        cacheKey,
      ];
      const lock = await tryAcquire(redlock, resources, ttlMs);
      if (lock) return { kind: 'acquired', ...held(merchantId, key, lock) };
      const reply = await inspectScript.run(redis, [cacheKey, inFlight], []);
      const [kind, value] = reply as [string, string | null | undefined];
      if (kind !== 'cached') return { kind: 'held', holderFingerprint: value ?? null };
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
