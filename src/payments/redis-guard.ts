import type { Logger } from '../platform/logger.js';
import { IdempotencyCacheUnavailable } from './payment-errors.js';

/** An outage is reported every few seconds while it lasts, not on every request. */
const REDIS_WARNING_INTERVAL_MS = 5_000;

export interface RedisGuard {
  /** Runs a Redis step; on failure either degrades (undefined) or throws (failing closed). */
  attempt<T>(step: string, fn: () => Promise<T>): Promise<T | undefined>;
  /** Redis is unreachable: degrade to the database path, or refuse when failing closed. */
  failed(step: string, error: unknown): void;
}

/**
 * Redis only spares the database work: when it fails, the request continues on the database
 * path (REDIS_FAILURE_MODE=open) or is refused with a retry hint (closed).
 */
export function createRedisGuard(options: {
  failClosed: boolean;
  retryAfterSeconds: number;
  logger: Logger;
}): RedisGuard {
  let lastWarning = 0;

  function failed(step: string, error: unknown): void {
    if (options.failClosed) throw new IdempotencyCacheUnavailable(options.retryAfterSeconds, error);
    // Once per interval, not once per request: an outage must not flood the logs.
    if (Date.now() - lastWarning >= REDIS_WARNING_INTERVAL_MS) {
      lastWarning = Date.now();
      options.logger.warn(
        { err: error, step },
        'redis unavailable; continuing on the database path',
      );
    }
  }

  return {
    async attempt(step, fn) {
      try {
        return await fn();
      } catch (error) {
        failed(step, error);
        return undefined;
      }
    },
    failed,
  };
}
