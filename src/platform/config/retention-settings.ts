import { integer } from './config-fields.js';

const DAY = 86_400;

/**
 * How long the tables that would otherwise grow forever keep their rows (issue 36 item 7,
 * DESIGN 110). Each is deleted by its role a batch at a time (src/jobs/retention-reaper.ts).
 */
export const retentionSettings = {
  /**
   * A processed_events row is the dedup of one event id (I4): it must outlive any redelivery of
   * that event. Kafka redelivers a record only while the topic keeps it (the broker's default
   * retention is 7 days), so the floor is 7 days and the default four times that. Past it, a
   * copy would also meet the payment's conditional move to processing, which only a pending
   * payment takes: a second guard, not the first.
   */
  PROCESSED_EVENT_RETENTION_SECONDS: integer(7 * DAY, 3_650 * DAY)
    .default(30 * DAY)
    .describe(
      'Processed event ids (settlement dedup) are deleted after this long; at least the payments topic retention.',
    ),
  /**
   * A dead job is the replay handle of a dead letter (I7) and is never deleted while its payment
   * or refund is unresolved; once the operator resolved it (the payment settled or failed, the
   * refund succeeded or failed), the job is kept this long for the record, then deleted.
   */
  DEAD_JOB_RETENTION_SECONDS: integer(DAY, 3_650 * DAY)
    .default(30 * DAY)
    .describe(
      'Dead settlement/refund jobs whose payment or refund is final are deleted this long after it became final.',
    ),
  /**
   * The acquirer's books answer inquiries (DESIGN 106): a dead letter replayed later asks them
   * before it charges again, so they must outlive any replay one expects; well past the retry
   * window (24 h) and the few days real acquirers keep idempotency keys.
   */
  ACQUIRER_BOOKS_RETENTION_SECONDS: integer(2 * DAY, 3_650 * DAY)
    .default(90 * DAY)
    .describe(
      "The acquirer role's books (charges, refunds and their call logs) are deleted after this long.",
    ),
  /**
   * GET /events lists a merchant's events this long (Stripe keeps 30 days): the recovery path of
   * a webhook receiver that was down. Each event's merchant copy (merchant_events, DESIGN 129)
   * is deleted by the settlement role's reaper after it.
   */
  EVENT_RETENTION_DAYS: integer(1, 3_650)
    .default(30)
    .describe('GET /events lists the events of the last this many days; older ones are deleted.'),
  RETENTION_REAPER_INTERVAL_MS: integer(1_000, 86_400_000)
    .default(60_000)
    .describe('How often the settlement and acquirer roles delete rows past their retention.'),
  /** Small enough that one DELETE holds its locks for milliseconds, not seconds. */
  RETENTION_REAPER_BATCH: integer(1, 100_000)
    .default(1_000)
    .describe('Rows deleted per statement by the retention reapers.'),
};
