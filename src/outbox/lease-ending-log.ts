import type { Logger } from '../platform/logger.js';
import { outboxMetrics } from './outbox-metrics.js';

/**
 * Rows a relay did not send because their lease was about to end (DESIGN 21): counted in
 * `outbox_lease_ending_unsent_total`, logged the first time and then at most once per interval
 * with how many rows since the last line (the outage-log pattern), never one line per row.
 */
export interface LeaseEndingLog {
  dropped(rows: number, leftMs: number): void;
}

export function createLeaseEndingLog(
  logger: Logger,
  intervalMs: number,
  now: () => number = Date.now,
): LeaseEndingLog {
  let lastLoggedAt = Number.NEGATIVE_INFINITY;
  let unlogged = 0;
  return {
    dropped(rows, leftMs) {
      outboxMetrics.leaseEndingUnsent.inc(rows);
      unlogged += rows;
      const at = now();
      if (at - lastLoggedAt < intervalMs) return;
      logger.warn(
        { rows_since_last_line: unlogged, lease_left_ms: Math.round(leftMs) },
        'outbox rows not sent: their lease ends before a send could finish; the relay that claims them next sends them',
      );
      lastLoggedAt = at;
      unlogged = 0;
    },
  };
}
