import { claimJobs, ownedJobsCte, type ClaimJoin } from '../jobs/job-store.js';
import { REFUND_JOBS, type ClaimedJob, type JobLease } from '../jobs/job-table.js';
import type { CompletionOutcome } from '../jobs/job-worker.js';
import { insertOutboxEvents } from '../outbox/outbox-writer.js';
import { webhookFanout } from '../webhooks/webhook-fanout.js';
import { refundEventId, type RefundEventType } from './refund-event-id.js';
import type { TraceContext } from '../outbox/trace-context.js';
import { releaseRefundedAmount } from '../payments/payment-updates.js';
import { withTransaction, type Pool, type Queryable } from '../platform/database/db.js';
import { REFUND_COLUMNS, toRefundResource, type RefundRow } from './refund-resource.js';

/** A claimed refund job: the engine's job (its id is the refund's) and the refund. */
export interface ClaimedRefundJob extends ClaimedJob {
  refund: RefundRow;
  /** The payment's source: the simulator's refund behaviour is keyed on it. */
  source: string;
  /** The refund POST's trace context: every attempt continues it. */
  trace: TraceContext;
}

const refundColumns = (alias: string) =>
  REFUND_COLUMNS.split(', ')
    .map((c) => `${alias}.${c}`)
    .join(', ');

/** The refund and its payment's source, joined by the engine's claim. */
const CLAIM_JOIN: ClaimJoin = {
  from: ', refunds r, payments p',
  where: 'AND r.id = j.refund_id AND p.id = r.payment_id',
  returning: `${refundColumns('r')}, p.source AS payment_source, j.traceparent, j.tracestate`,
};

/**
 * Claims up to `limit` due refund jobs with their refunds (the engine's claim, job-store):
 * leased, attempts counted before the acquirer is called, `exhausted` past `maxAttempts`. A
 * worker that dies holding a job loses it when the lease ends; the next call to the acquirer
 * carries the same key, so it is never refunded twice.
 */
export async function claimDueRefundJobs(
  db: Queryable,
  limit: number,
  leaseMs: number,
  maxAttempts: number,
): Promise<ClaimedRefundJob[]> {
  const claimed = await claimJobs<
    RefundRow & { payment_source: string; traceparent: string | null; tracestate: string | null }
  >(db, REFUND_JOBS, CLAIM_JOIN, { limit, leaseMs, maxAttempts });
  return claimed.map(({ row, ...job }) => {
    const { payment_source: source, traceparent, tracestate } = row;
    const refund: RefundRow = {
      id: row.id,
      payment_id: row.payment_id,
      amount: row.amount,
      currency: row.currency,
      reason: row.reason,
      metadata: row.metadata,
      status: row.status,
      failure_code: row.failure_code,
      created_at: row.created_at,
    };
    return { ...job, refund, source, trace: { traceparent, tracestate } };
  });
}

/** A refund the completion moved, with its merchant (whose webhook endpoints get the event). */
type MovedRefund = RefundRow & { merchant_id: string };

export type RefundFinal = { status: 'succeeded' } | { status: 'failed'; failureCode: string };

/** The completion's fenced delete of the job, if this claim still holds it ($1 id, $5 owner). */
const OWNED = ownedJobsCte(REFUND_JOBS, 'ARRAY[$1::uuid]', 'ARRAY[$5::uuid]');

/**
 * The terminal transition, exactly once, by the claim that holds the job: the job removed only
 * if this claim still owns it and, in the same statement, pending -> succeeded | failed only if
 * still pending; a failed refund's amount released (amount_refunded lowered) in the same
 * transaction, its result event into the outbox (keyed by the payment id, carrying `trace`: the
 * attempt's span). `lease_lost` when another claim holds the job now (nothing written),
 * `unchanged` when the refund had already left pending.
 */
export async function completeRefund(
  pool: Pool,
  job: JobLease,
  final: RefundFinal,
  topic: string,
  now: Date,
  trace: TraceContext,
): Promise<CompletionOutcome> {
  const refundId = job.id;
  return withTransaction(pool, async (client) => {
    const failureCode = final.status === 'failed' ? final.failureCode : null;
    const { rows } = await client.query<
      { owned_id: string } & { [K in keyof MovedRefund]: MovedRefund[K] | null }
    >(
      `WITH ${OWNED},
       moved AS (
         UPDATE refunds r SET status = $2, failure_code = $3, updated_at = $4
           FROM owned WHERE r.id = owned.job_id AND r.status = 'pending'
         RETURNING ${refundColumns('r')}, r.merchant_id)
       SELECT owned.job_id AS owned_id, moved.* FROM owned LEFT JOIN moved ON true`,
      [refundId, final.status, failureCode, now, job.leaseOwner],
    );
    const result = rows[0];
    if (!result) return 'lease_lost';
    if (result.id === null) return 'unchanged';
    const row = result as MovedRefund;
    // The payment's row lock, held until commit, before the event (and its webhook deliveries'
    // seq) is written: refunds of one payment completing at once then commit in seq order, so a
    // later delivery never becomes claimable while an earlier one is still uncommitted (webhook
    // deliveries go in seq order per endpoint and payment; a chaos run caught two the other way).
    await client.query('SELECT 1 FROM payments WHERE id = $1 FOR NO KEY UPDATE', [row.payment_id]);
    if (final.status === 'failed') {
      await releaseRefundedAmount(client, row.payment_id, row.amount, now);
    }
    const type: RefundEventType =
      final.status === 'succeeded' ? 'refund.succeeded' : 'refund.failed';
    await insertOutboxEvents(
      client,
      [
        {
          eventId: refundEventId(refundId, type),
          type,
          aggregateId: row.payment_id,
          topic,
          data: JSON.stringify(toRefundResource(row)),
          createdAt: now,
          trace,
          merchantId: row.merchant_id,
        },
      ],
      webhookFanout,
    );
    return 'completed';
  });
}
