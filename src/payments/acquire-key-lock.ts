import type { KeyLocks } from '../idempotency/key-lock.js';
import type { RedisGuard } from './redis-guard.js';

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
  const lock = await redis.attempt('lock', () => locks.acquire(merchantId, key, fingerprintHex));
  if (lock?.kind === 'held') return lock;
  if (lock?.kind === 'unavailable') redis.failed('lock', lock.error);
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
