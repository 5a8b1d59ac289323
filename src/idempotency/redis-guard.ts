import type { OutageLog } from '../platform/resilience/outage-log.js';
import { IdempotencyCacheUnavailable } from './idempotency-errors.js';

export interface RedisGuard {
  /**
   * Runs a Redis step; on failure (or while Redis is being skipped) either degrades (undefined)
   * or throws IdempotencyCacheUnavailable (failing closed).
   */
  attempt<T>(step: string, fn: () => Promise<T>): Promise<T | undefined>;
  /**
   * A step after the commit (cache the response, release the lock): the answer is decided, so
   * it never throws, and it is skipped while Redis is being skipped.
   */
  bestEffort(step: string, fn: () => Promise<unknown>): Promise<void>;
}

export interface RedisGuardOptions {
  failClosed: boolean;
  retryAfterSeconds: number;
  /** After a failure, Redis is skipped this long (0: never skipped). */
  cooldownMs: number;
  outage: OutageLog;
  now?: () => number;
}

/**
 * Redis only spares the database work: when it fails, the request continues on the database
 * path (REDIS_FAILURE_MODE=open) or is refused with a retry hint (closed).
 *
 * A small circuit breaker: after a failure (a refused connection, or a command timeout when
 * Redis is frozen) the next `cooldownMs` of requests skip Redis at once instead of each paying
 * the command timeout; then one request probes it, and its success closes the breaker.
 */
export function createRedisGuard(options: RedisGuardOptions): RedisGuard {
  const now = options.now ?? Date.now;
  /** 0: closed (use Redis). Otherwise Redis is skipped until then. */
  let skipUntil = 0;

  /** Whether this call may use Redis; the first call after a cooldown is the probe. */
  function mayUse(): boolean {
    if (skipUntil === 0) return true;
    const at = now();
    if (at < skipUntil) return false;
    // This call probes; the others keep skipping until it answers.
    skipUntil = at + options.cooldownMs;
    return true;
  }

  function record(error: unknown, step: string): void {
    if (options.cooldownMs > 0) skipUntil = now() + options.cooldownMs;
    options.outage.failed(error, { step });
  }

  function succeeded(): void {
    skipUntil = 0;
    options.outage.succeeded();
  }

  function refuse(error: unknown): void {
    if (options.failClosed) throw new IdempotencyCacheUnavailable(options.retryAfterSeconds, error);
  }

  return {
    async attempt(step, fn) {
      if (!mayUse()) {
        refuse(new Error('redis skipped after a recent failure'));
        return undefined;
      }
      try {
        const result = await fn();
        succeeded();
        return result;
      } catch (error) {
        record(error, step);
        refuse(error);
        return undefined;
      }
    },
    async bestEffort(step, fn) {
      if (!mayUse()) return;
      // A success here does not end an outage: a lock release swallows its own errors.
      try {
        await fn();
      } catch (error) {
        record(error, step);
      }
    },
  };
}
