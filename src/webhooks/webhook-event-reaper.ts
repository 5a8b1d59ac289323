import type { Pool } from '../platform/database/db.js';
import type { Logger } from '../platform/telemetry/logger.js';
import { reapWebhookEvents } from './webhook-delivery-worker.js';

/** Events (with their deliveries) per DELETE, and the most DELETEs one round makes. */
const REAP_BATCH = 1_000;
const MAX_BATCHES_PER_ROUND = 100;

export interface WebhookEventReaper {
  /** Deletes what is past retention now, a batch at a time (bounded); returns how many. */
  runOnce: () => Promise<number>;
  /** Stops the interval and waits for a round in progress. */
  stop: () => Promise<void>;
}

/**
 * Deletes webhook events older than WEBHOOK_EVENT_RETENTION_SECONDS (their deliveries, attempts
 * and jobs go with them, ON DELETE CASCADE) every `intervalMs`, batch by batch so no statement
 * holds many locks; a round stops after MAX_BATCHES_PER_ROUND and the next one goes on. Rounds
 * never overlap; a failed round is logged and the next one retries.
 */
export function startWebhookEventReaper(
  pool: Pool,
  logger: Logger,
  options: { retentionSeconds: number; intervalMs: number },
): WebhookEventReaper {
  async function runOnce(): Promise<number> {
    let total = 0;
    for (let batch = 0; batch < MAX_BATCHES_PER_ROUND; batch++) {
      const deleted = await reapWebhookEvents(pool, options.retentionSeconds, REAP_BATCH);
      total += deleted;
      if (deleted < REAP_BATCH) break;
    }
    return total;
  }

  let running: Promise<void> | undefined;
  const timer = setInterval(() => {
    running ??= runOnce()
      .then((deleted) => {
        if (deleted > 0) logger.info({ deleted }, 'webhook events past retention deleted');
      })
      .catch((error: unknown) => {
        logger.warn({ err: error }, 'webhook event reaper failed; will retry');
      })
      .finally(() => {
        running = undefined;
      });
  }, options.intervalMs);
  timer.unref();

  return {
    runOnce,
    stop: async () => {
      clearInterval(timer);
      await running;
    },
  };
}
