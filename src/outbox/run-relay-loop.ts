import { fullJitterDelay } from '../platform/backoff.js';
import { drainOutbox, type DrainResult } from './drain-outbox.js';
import type { LoopWaiter } from './loop-waiter.js';
import { outboxMetrics } from './outbox-metrics.js';
import { purgePublishedRows } from './purge-published-rows.js';
import type { RelayContext } from './relay-context.js';

/** Ceiling of the first pause after an iteration failed on Kafka or Postgres. */
const FIRST_BACKOFF_MS = 250;
/** A dependency back after an outage is used again within this long. */
const MAX_BACKOFF_MS = 5_000;
/** At 500 rows/s retention removes ~5,000 rows per round: a few statements every 10 s. */
const PURGE_INTERVAL_MS = 10_000;

/**
 * Loops until the waiter is stopped: drains while there is work, purges every
 * PURGE_INTERVAL_MS, waits RELAY_POLL_INTERVAL_MS when idle (a wake-up cuts that short) and
 * backs off (full jitter, so relays that failed together do not return together) on failures.
 */
export async function runRelayLoop(ctx: RelayContext, waiter: LoopWaiter): Promise<void> {
  let failures = 0;
  let lastPurge = Number.NEGATIVE_INFINITY;
  while (!waiter.isStopped()) {
    // Cleared before the round: a notification arriving during it triggers another round.
    waiter.clearWake();
    let drained: DrainResult | undefined;
    try {
      const started = performance.now();
      // Under endless load, hand back to the loop now and then, so the purge still runs.
      drained = await drainOutbox(
        ctx,
        () => waiter.isStopped() || performance.now() - started >= PURGE_INTERVAL_MS,
      );
      if (performance.now() - lastPurge >= PURGE_INTERVAL_MS) {
        lastPurge = performance.now();
        await purgePublishedRows(ctx.db, ctx.config.OUTBOX_RETENTION_SECONDS, ctx.logger);
      }
    } catch (error) {
      if (failures === 0) ctx.logger.warn({ err: error }, 'relay round failed; backing off');
    }
    if (!drained || drained.kafkaUnavailable) {
      if (drained && failures === 0) ctx.logger.warn('kafka unreachable; relay backing off');
      if (drained) outboxMetrics.kafkaUnavailable.inc();
      failures++;
      await waiter.pause(
        fullJitterDelay(failures, FIRST_BACKOFF_MS, MAX_BACKOFF_MS, ctx.random),
        false,
      );
      continue;
    }
    if (failures > 0) ctx.logger.info({ failures }, 'relay recovered');
    failures = 0;
    // Publishing may have unblocked the next events of those payments: look again at once.
    if (drained.claimed > 0) continue;
    await waiter.pause(ctx.config.RELAY_POLL_INTERVAL_MS, true);
  }
}
