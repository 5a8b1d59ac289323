import Redlock, { ResourceLockedError, type Lock } from 'redlock';
import type { Redis } from '../platform/redis.js';
import type { RedisGuard } from './redis-guard.js';

export type LockAttempt =
  | { kind: 'acquired'; release: () => Promise<void> }
  /** Another request holds the key; its fingerprint, when known, lets a mismatch win (422). */
  | { kind: 'held'; holderFingerprint: string | null }
  | { kind: 'unavailable'; error: Error };

export interface KeyLocks {
  acquire(merchantId: string, key: string, fingerprint: string): Promise<LockAttempt>;
}

/**
 * A Redlock lock per (merchant, key). It spares the database a storm of duplicates; it does not
 * guard correctness (no fencing token, it can expire mid-request): the UNIQUE constraint does.
 * Next to the lock, an "in-flight" key holds the holder's request fingerprint so a concurrent
 * request with a different body gets 422 rather than 409.
 */
export function createKeyLocks(redis: Redis, prefix: string, ttlMs: number): KeyLocks {
  // No retries: a held lock is answered at once (409 or the bounded wait), not spun on.
  const redlock = new Redlock([redis], { retryCount: 0, driftFactor: 0.01 });
  const lockKey = (merchantId: string, key: string) => `${prefix}idem:lock:${merchantId}:${key}`;
  const inFlightKey = (merchantId: string, key: string) =>
    `${prefix}idem:inflight:${merchantId}:${key}`;

  return {
    async acquire(merchantId, key, fingerprint) {
      let lock: Lock;
      try {
        lock = await redlock.acquire([lockKey(merchantId, key)], ttlMs);
      } catch (error) {
        if (await isLockedByOther(error)) {
          const holderFingerprint = await redis.get(inFlightKey(merchantId, key)).catch(() => null);
          return { kind: 'held', holderFingerprint };
        }
        return { kind: 'unavailable', error: asError(error) };
      }
      // Not awaited: it travels while the database works. Best effort: without it a
      // mismatching concurrent request gets 409 instead of 422.
      void redis.set(inFlightKey(merchantId, key), fingerprint, 'PX', ttlMs).catch(() => null);
      return {
        kind: 'acquired',
        // The DEL follows the SET on the same connection, so Redis applies them in order.
        // Both may fail when the lock expired or Redis went away; either way it is free.
        release: async () => {
          await Promise.allSettled([lock.release(), redis.del(inFlightKey(merchantId, key))]);
        },
      };
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

/** Takes the Redlock lock on (merchant, key); a Redis failure goes through the guard. */
export async function acquireKeyLock(
  locks: KeyLocks,
  redis: RedisGuard,
  merchantId: string,
  key: string,
  fingerprintHex: string,
): Promise<KeyLockResult> {
  const lock = await redis.attempt('lock', async () => {
    const attempt = await locks.acquire(merchantId, key, fingerprintHex);
    if (attempt.kind === 'unavailable') throw attempt.error;
    return attempt;
  });
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

/** Redlock reports a held resource as votes against carrying ResourceLockedError. */
async function isLockedByOther(error: unknown): Promise<boolean> {
  const attempts = (
    error as { attempts?: readonly Promise<{ votesAgainst: Map<unknown, Error> }>[] }
  ).attempts;
  if (!attempts || attempts.length === 0) return false;
  const stats = await attempts[attempts.length - 1];
  if (!stats || stats.votesAgainst.size === 0) return false;
  return [...stats.votesAgainst.values()].every((e) => e instanceof ResourceLockedError);
}

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}
