import { fullJitterDelay } from '../platform/backoff.js';
import { createOutageLog } from '../platform/outage-log.js';
import { drainOutbox, type DrainResult } from './drain-outbox.js';
import type { LoopWaiter } from './loop-waiter.js';
import { outboxMetrics } from './outbox-metrics.js';
import { createWakeupPolicy, requestWakeups } from './outbox-wakeups.js';
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
 * PURGE_INTERVAL_MS, and backs off (full jitter, so relays that failed together do not return
 * together) on failures. When a round finds nothing: a relay that claimed rows within the last
 * BUSY_WINDOW_MS looks again after BUSY_POLL_MS; an idle one asks writers to NOTIFY (before its
 * next round, which doubles as the look that closes the race with a writer that did not see the
 * request yet) and waits RELAY_POLL_INTERVAL_MS, which a wake-up cuts short (outbox-wakeups.ts).
 */
export async function runRelayLoop(ctx: RelayContext, waiter: LoopWaiter): Promise<void> {
  // One warning when rounds start failing, one per interval while they do, one line at the end.
  const outage = createOutageLog(
    'relay dependencies (kafka or postgres)',
    ctx.logger,
    ctx.config.OUTAGE_LOG_INTERVAL_MS ?? 30_000,
  );
  let failures = 0;
  let lastPurge = Number.NEGATIVE_INFINITY;
  const wakeups = createWakeupPolicy(ctx.config.RELAY_POLL_INTERVAL_MS);
  while (!waiter.isStopped()) {
    // Cleared before the round: a notification arriving during it triggers another round.
    waiter.clearWake();
    let drained: DrainResult | undefined;
    try {
      if (wakeups.shouldRequest(performance.now())) {
        await requestWakeups(ctx.db, wakeups.windowMs);
        wakeups.requested(performance.now());
      }
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
      outage.failed(error, { action: 'relay round failed; backing off' });
    }
    if (!drained || drained.kafkaUnavailable) {
      if (drained) outage.failed('kafka unreachable', { action: 'relay backing off' });
      if (drained) outboxMetrics.kafkaUnavailable.inc();
      failures++;
      await waiter.pause(
        fullJitterDelay(failures, FIRST_BACKOFF_MS, MAX_BACKOFF_MS, ctx.random),
        false,
      );
      continue;
    }
    outage.succeeded();
    failures = 0;
    // Publishing may have unblocked the next events of those payments: look again at once.
    if (drained.claimed > 0) {
      wakeups.claimed(performance.now());
      continue;
    }
    await waiter.pause(wakeups.idleWaitMs(performance.now()), true);
  }
}
