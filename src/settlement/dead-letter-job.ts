import type { Pool } from '../platform/db.js';
import type { Logger } from '../platform/logger.js';
import { toDeadLetter, type DeadLetterReason } from './dead-letter.js';
import {
  markDead,
  scheduleRetry,
  type ClaimedJob,
  type Failure,
  type SourceRecord,
} from './settlement-repository.js';
import { settlementMetrics } from './settlement-metrics.js';
import type { SettlementRunCounts } from './settlement-run-counts.js';

/** Sends a dead letter; resolves once the broker acknowledged it. */
export type PublishDeadLetter = (record: ReturnType<typeof toDeadLetter>) => Promise<void>;

/** Publishes a record to the dead-letter topic and counts it. */
export async function sendDeadLetter(
  publish: PublishDeadLetter,
  record: SourceRecord,
  reason: DeadLetterReason,
): Promise<void> {
  await publish(toDeadLetter(record, reason));
  settlementMetrics.deadLettered.inc({ error_class: reason.errorClass });
}

/**
 * Retries exhausted: publish first, then mark dead. A crash in between re-claims the job after
 * its lease and publishes again (same event id): at least once, never lost. A publish that
 * fails (broker down) records the acquirer's failure and tries again after a backoff; the job
 * is then claimed `exhausted`, so the acquirer is not called again.
 */
export async function deadLetterJob(
  deps: {
    pool: Pool;
    publishDeadLetter: PublishDeadLetter;
    logger: Logger;
    retryDelayMs: (attempts: number) => number;
  },
  job: ClaimedJob,
  failure: Failure,
  counts: SettlementRunCounts,
): Promise<void> {
  const times = { firstFailureAt: job.firstFailureAt ?? new Date(), lastFailureAt: new Date() };
  try {
    await sendDeadLetter(deps.publishDeadLetter, job.record, {
      eventId: job.eventId,
      errorClass: failure.errorClass,
      errorMessage: failure.message,
      attempts: job.attempts,
      ...times,
    });
  } catch (error) {
    deps.logger.warn(
      { err: error, payment_id: job.paymentId },
      'dead-letter publish failed; retrying later without calling the acquirer',
    );
    await scheduleRetry(deps.pool, job, failure, deps.retryDelayMs(job.attempts));
    return;
  }
  await markDead(deps.pool, job, failure);
  counts.deadLettered++;
  deps.logger.warn(
    { payment_id: job.paymentId, attempts: job.attempts, error_class: failure.errorClass },
    'settlement retries exhausted; event dead-lettered',
  );
}
