import { paymentEventId, type PaymentEventType } from '../outbox/event-id.js';
import { currentTraceContext } from '../outbox/trace-context.js';
import { withTransaction, type Pool, type Queryable } from '../platform/db.js';
import { toPaymentResource, type PaymentRow } from '../payments/payment-resource.js';

/** Where a consumed record came from: kept with its job so a dead letter can carry it. */
export interface SourceRecord {
  topic: string;
  partition: number;
  offset: string;
  key: string | null;
  value: string;
}

export type AcceptOutcome = 'accepted' | 'duplicate' | 'revived' | 'unknown_payment';

/**
 * Accepts a `payment.created` event in ONE transaction: the processed-event row (the dedup
 * key, I4), the pending -> processing transition, and the durable settlement job. A copy seen
 * before changes nothing, except that it revives a job that went to the dead-letter queue (that
 * is what `dlq:replay` relies on).
 */
export async function acceptPaymentCreated(
  pool: Pool,
  eventId: string,
  paymentId: string,
  source: SourceRecord,
): Promise<AcceptOutcome> {
  return withTransaction(pool, async (client) => {
    const fresh = await client.query(
      `INSERT INTO processed_events (event_id, event_type, payment_id)
       VALUES ($1, 'payment.created', $2) ON CONFLICT (event_id) DO NOTHING`,
      [eventId, paymentId],
    );
    if (fresh.rowCount === 0) {
      const revived = await client.query(
        `UPDATE settlement_jobs
            SET state = 'pending', attempts = 0, next_attempt_at = now(), locked_until = NULL
          WHERE payment_id = $1 AND state = 'dead'`,
        [paymentId],
      );
      return revived.rowCount === 1 ? 'revived' : 'duplicate';
    }
    const moved = await client.query(
      `UPDATE payments SET status = 'processing', updated_at = now()
        WHERE id = $1 AND status = 'pending'`,
      [paymentId],
    );
    if (moved.rowCount === 0) {
      const exists = await client.query('SELECT 1 FROM payments WHERE id = $1', [paymentId]);
      // Not ours: roll back the dedup row so a replay after a fix is not swallowed.
      if (exists.rowCount === 0) throw new UnknownPaymentError(paymentId);
      // Already past pending (settled by an earlier life of this event): nothing to do.
      return 'accepted';
    }
    await client.query(
      `INSERT INTO settlement_jobs (payment_id, event_id, source_topic, source_partition,
                                    source_offset, message_key, message_value)
       VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (payment_id) DO NOTHING`,
      [paymentId, eventId, source.topic, source.partition, source.offset, source.key, source.value],
    );
    return 'accepted';
  }).catch((error: unknown) => {
    if (error instanceof UnknownPaymentError) return 'unknown_payment' as const;
    throw error;
  });
}

class UnknownPaymentError extends Error {}

export interface ClaimedJob {
  paymentId: string;
  eventId: string;
  attempts: number;
  amount: number;
  currency: string;
  source: string;
  paymentCreatedAt: Date;
  firstFailureAt: Date | null;
  record: SourceRecord;
}

/**
 * Claims up to `limit` due jobs for `leaseMs` (FOR UPDATE SKIP LOCKED: several workers never
 * claim the same job) and counts the attempt. A worker that dies holding a job loses it when
 * the lease ends, and the job is retried.
 */
export async function claimDueJobs(
  db: Queryable,
  limit: number,
  leaseMs: number,
): Promise<ClaimedJob[]> {
  const { rows } = await db.query<{
    payment_id: string;
    event_id: string;
    attempts: number;
    amount: string;
    currency: string;
    source: string;
    created_at: Date;
    first_failure_at: Date | null;
    source_topic: string;
    source_partition: number;
    source_offset: string;
    message_key: string | null;
    message_value: string;
  }>(
    `UPDATE settlement_jobs j
        SET attempts = j.attempts + 1,
            locked_until = now() + make_interval(secs => $2::double precision / 1000)
       FROM (SELECT payment_id FROM settlement_jobs
              WHERE state = 'pending' AND next_attempt_at <= now()
                AND (locked_until IS NULL OR locked_until <= now())
              ORDER BY next_attempt_at LIMIT $1
              FOR UPDATE SKIP LOCKED) due,
            payments p
      WHERE j.payment_id = due.payment_id AND p.id = j.payment_id
      RETURNING j.payment_id, j.event_id, j.attempts, p.amount, p.currency, p.source, p.created_at,
                j.first_failure_at, j.source_topic, j.source_partition, j.source_offset,
                j.message_key, j.message_value`,
    [limit, leaseMs],
  );
  return rows.map((row) => ({
    paymentId: row.payment_id,
    eventId: row.event_id,
    attempts: row.attempts,
    amount: Number(row.amount),
    currency: row.currency,
    source: row.source,
    paymentCreatedAt: row.created_at,
    firstFailureAt: row.first_failure_at,
    record: {
      topic: row.source_topic,
      partition: row.source_partition,
      offset: row.source_offset,
      key: row.message_key,
      value: row.message_value,
    },
  }));
}

export type FinalStatus = { status: 'settled' } | { status: 'failed'; failureCode: string };

/**
 * The terminal transition, exactly once (I4): processing -> settled | failed only if still
 * processing, its result event into the outbox, and the job removed, in one transaction.
 * Returns false when another worker got there first (nothing written).
 */
export async function completePayment(
  pool: Pool,
  paymentId: string,
  final: FinalStatus,
  topic: string,
  now: Date,
): Promise<boolean> {
  return withTransaction(pool, async (client) => {
    const failureCode = final.status === 'failed' ? final.failureCode : null;
    const { rows } = await client.query<PaymentRow>(
      `UPDATE payments SET status = $2, failure_code = $3, updated_at = $4
        WHERE id = $1 AND status = 'processing'
       RETURNING id, amount, currency, source, description, metadata, status, failure_code,
                 created_at`,
      [paymentId, final.status, failureCode, now],
    );
    const row = rows[0];
    if (row) {
      const type: PaymentEventType =
        final.status === 'settled' ? 'payment.settled' : 'payment.failed';
      // The settlement attempt's span: the result event continues the payment's trace.
      const trace = currentTraceContext();
      await client.query(
        `INSERT INTO outbox (event_id, event_type, aggregate_id, topic, data, created_at,
                             traceparent, tracestate)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
        [
          paymentEventId(paymentId, type),
          type,
          paymentId,
          topic,
          JSON.stringify(toPaymentResource(row)),
          now,
          trace.traceparent,
          trace.tracestate,
        ],
      );
    }
    await client.query('DELETE FROM settlement_jobs WHERE payment_id = $1', [paymentId]);
    return row !== undefined;
  });
}

export interface Failure {
  errorClass: string;
  message: string;
}

/** A transient failure with attempts left: try again after `delayMs`, lease released. */
export async function scheduleRetry(
  db: Queryable,
  paymentId: string,
  failure: Failure,
  delayMs: number,
): Promise<void> {
  await db.query(
    `UPDATE settlement_jobs
        SET next_attempt_at = now() + make_interval(secs => $2::double precision / 1000),
            locked_until = NULL,
            first_failure_at = coalesce(first_failure_at, now()),
            last_failure_at = now(), last_error_class = $3, last_error = $4
      WHERE payment_id = $1`,
    [paymentId, delayMs, failure.errorClass, failure.message.slice(0, 1_000)],
  );
}

/**
 * Retries exhausted: the job stays, dead, with its last error; the payment stays in processing,
 * visibly unresolved (I7), until `dlq:replay` revives it. Returns the failure times for the
 * dead letter's headers.
 */
export async function markDead(
  db: Queryable,
  paymentId: string,
  failure: Failure,
): Promise<{ firstFailureAt: Date; lastFailureAt: Date }> {
  const { rows } = await db.query<{ first_failure_at: Date; last_failure_at: Date }>(
    `UPDATE settlement_jobs
        SET state = 'dead', locked_until = NULL,
            first_failure_at = coalesce(first_failure_at, now()),
            last_failure_at = now(), last_error_class = $2, last_error = $3
      WHERE payment_id = $1
      RETURNING first_failure_at, last_failure_at`,
    [paymentId, failure.errorClass, failure.message.slice(0, 1_000)],
  );
  const row = rows[0];
  const now = new Date();
  return {
    firstFailureAt: row?.first_failure_at ?? now,
    lastFailureAt: row?.last_failure_at ?? now,
  };
}

/** When the earliest pending job is due, to sleep exactly until then. */
export async function nextDueAt(db: Queryable): Promise<Date | null> {
  const { rows } = await db.query<{ due: Date | null }>(
    `SELECT min(greatest(next_attempt_at, coalesce(locked_until, next_attempt_at))) AS due
       FROM settlement_jobs WHERE state = 'pending'`,
  );
  return rows[0]?.due ?? null;
}
