import { refundEventId, type RefundEventType } from '../outbox/refund-event-id.js';
import type { TraceContext } from '../outbox/trace-context.js';
import { withTransaction, type Pool, type Queryable } from '../platform/db.js';
import { REFUND_COLUMNS, toRefundResource, type RefundRow } from './refund-resource.js';

export interface ClaimedRefundJob {
  refund: RefundRow;
  attempts: number;
  firstFailureAt: Date | null;
  /** The payment's source: the simulator's refund behaviour is keyed on it. */
  source: string;
  /** The refund POST's trace context: every attempt continues it. */
  trace: TraceContext;
}

/**
 * Claims up to `limit` due refund jobs for `leaseMs` (FOR UPDATE SKIP LOCKED: two workers never
 * claim the same job) and counts the attempt. A worker that dies holding a job loses it when the
 * lease ends; the next call to the acquirer carries the same key, so it is never refunded twice.
 */
export async function claimDueRefundJobs(
  db: Queryable,
  limit: number,
  leaseMs: number,
): Promise<ClaimedRefundJob[]> {
  const columns = REFUND_COLUMNS.split(', ')
    .map((c) => `r.${c}`)
    .join(', ');
  const { rows } = await db.query<
    RefundRow & {
      attempts: number;
      first_failure_at: Date | null;
      source: string;
      traceparent: string | null;
      tracestate: string | null;
    }
  >(
    `UPDATE refund_jobs j
        SET attempts = j.attempts + 1,
            locked_until = now() + make_interval(secs => $2::double precision / 1000)
       FROM (SELECT refund_id FROM refund_jobs
              WHERE state = 'pending' AND next_attempt_at <= now()
                AND (locked_until IS NULL OR locked_until <= now())
              ORDER BY next_attempt_at LIMIT $1
              FOR UPDATE SKIP LOCKED) due,
            refunds r, payments p
      WHERE j.refund_id = due.refund_id AND r.id = j.refund_id AND p.id = r.payment_id
      RETURNING ${columns}, j.attempts, j.first_failure_at, p.source,
                j.traceparent, j.tracestate`,
    [limit, leaseMs],
  );
  return rows.map(({ attempts, first_failure_at, source, traceparent, tracestate, ...refund }) => ({
    refund,
    attempts,
    firstFailureAt: first_failure_at,
    source,
    trace: { traceparent, tracestate },
  }));
}

export type RefundFinal = { status: 'succeeded' } | { status: 'failed'; failureCode: string };

/**
 * The terminal transition, exactly once: pending -> succeeded | failed only if still pending,
 * a failed refund's amount released (amount_refunded lowered) in the same transaction, its
 * result event into the outbox (keyed by the payment id, carrying `trace`: the attempt's span),
 * and the job removed. Returns false
 * when another worker got there first (nothing written).
 */
export async function completeRefund(
  pool: Pool,
  refundId: string,
  final: RefundFinal,
  topic: string,
  now: Date,
  trace: TraceContext,
): Promise<boolean> {
  return withTransaction(pool, async (client) => {
    const failureCode = final.status === 'failed' ? final.failureCode : null;
    const { rows } = await client.query<RefundRow>(
      `UPDATE refunds SET status = $2, failure_code = $3, updated_at = $4
        WHERE id = $1 AND status = 'pending'
       RETURNING ${REFUND_COLUMNS}`,
      [refundId, final.status, failureCode, now],
    );
    const row = rows[0];
    if (row) {
      if (final.status === 'failed') {
        await client.query(
          `UPDATE payments SET amount_refunded = amount_refunded - $2, updated_at = $3
            WHERE id = $1`,
          [row.payment_id, row.amount, now],
        );
      }
      const type: RefundEventType =
        final.status === 'succeeded' ? 'refund.succeeded' : 'refund.failed';
      await client.query(
        `INSERT INTO outbox (event_id, event_type, aggregate_id, topic, data, created_at,
                             traceparent, tracestate)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
        [
          refundEventId(refundId, type),
          type,
          row.payment_id,
          topic,
          JSON.stringify(toRefundResource(row)),
          now,
          trace.traceparent,
          trace.tracestate,
        ],
      );
    }
    await client.query('DELETE FROM refund_jobs WHERE refund_id = $1', [refundId]);
    return row !== undefined;
  });
}

export interface RefundFailure {
  errorClass: string;
  message: string;
}

/** A transient failure with attempts left: try again after `delayMs`, lease released. */
export async function scheduleRefundRetry(
  db: Queryable,
  refundId: string,
  failure: RefundFailure,
  delayMs: number,
): Promise<void> {
  await db.query(
    `UPDATE refund_jobs
        SET next_attempt_at = now() + make_interval(secs => $2::double precision / 1000),
            locked_until = NULL,
            first_failure_at = coalesce(first_failure_at, now()),
            last_failure_at = now(), last_error_class = $3, last_error = $4
      WHERE refund_id = $1`,
    [refundId, delayMs, failure.errorClass, failure.message.slice(0, 1_000)],
  );
}

/**
 * Retries exhausted: the job stays, dead, with its last error; the refund stays pending and its
 * amount stays reserved (the acquirer may have refunded: releasing it could pay out twice),
 * visibly unresolved until an operator revives the job.
 */
export async function markRefundDead(
  db: Queryable,
  refundId: string,
  failure: RefundFailure,
): Promise<void> {
  await db.query(
    `UPDATE refund_jobs
        SET state = 'dead', locked_until = NULL,
            first_failure_at = coalesce(first_failure_at, now()),
            last_failure_at = now(), last_error_class = $2, last_error = $3
      WHERE refund_id = $1`,
    [refundId, failure.errorClass, failure.message.slice(0, 1_000)],
  );
}

/** A dead refund job to revive, and the dlq:replay token of the copy that asks for it. */
export interface RefundRevival {
  refundId: string;
  token: string;
}

/**
 * dlq:replay's `refund.created` copies: a dead refund job comes back (pending, attempts reset)
 * once per replay token, like a dead settlement job (record-created-events). A job that is not
 * dead, or was already revived with that token, is left alone. Returns the revived refund ids.
 */
export async function reviveReplayedRefundJobs(
  db: Queryable,
  revivals: readonly RefundRevival[],
): Promise<Set<string>> {
  const lastTokenPerRefund = new Map(revivals.map((r) => [r.refundId, r.token]));
  if (lastTokenPerRefund.size === 0) return new Set();
  const { rows } = await db.query<{ refund_id: string }>(
    `UPDATE refund_jobs j
        SET state = 'pending', attempts = 0, next_attempt_at = now(), locked_until = NULL,
            replay_token = r.token, revived_at = now()
       FROM unnest($1::uuid[], $2::text[]) AS r(refund_id, token)
      WHERE j.refund_id = r.refund_id AND j.state = 'dead'
        AND j.replay_token IS DISTINCT FROM r.token
     RETURNING j.refund_id`,
    [[...lastTokenPerRefund.keys()], [...lastTokenPerRefund.values()]],
  );
  return new Set(rows.map((row) => row.refund_id));
}
