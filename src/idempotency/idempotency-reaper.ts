import type { Queryable } from '../platform/database/db.js';
import type { Logger } from '../platform/telemetry/logger.js';
import { reapExpiredKeys } from './idempotency-repository.js';

/**
 * Deletes expired idempotency records in batches. `runOnce` drains what is expired now (batch by
 * batch, so no statement holds many locks) and is what tests call; `start` repeats it on an
 * interval until the returned stop function is called.
 */
export function createIdempotencyReaper(
  db: Queryable,
  logger: Logger,
  options: { batch: number; intervalMs: number },
) {
  async function runOnce(): Promise<number> {
    let total = 0;
    for (;;) {
      const deleted = await reapExpiredKeys(db, options.batch);
      total += deleted;
      if (deleted < options.batch) return total;
    }
  }

  function start(): () => Promise<void> {
    let running: Promise<unknown> = Promise.resolve();
    const timer = setInterval(() => {
      running = runOnce()
        .then((deleted) => {
          if (deleted > 0) logger.info({ deleted }, 'expired idempotency keys reaped');
        })
        .catch((error: unknown) => {
          logger.warn({ err: error }, 'idempotency reaper failed; will retry');
        });
    }, options.intervalMs);
    timer.unref();
    return async () => {
      clearInterval(timer);
      await running;
    };
  }

  return { runOnce, start };
}
