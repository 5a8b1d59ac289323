import {
  claimJobs,
  ownedJobsCte,
  reviveDeadJobs,
  type ClaimJoin,
  type Revival,
} from '../jobs/job-store.js';
import { HOLD_JOBS, type ClaimedJob, type JobLease } from '../jobs/job-table.js';
import type { CompletionOutcome } from '../jobs/job-worker.js';
import { insertOutboxEvents } from '../outbox/outbox-writer.js';
import type { TraceContext } from '../outbox/trace-context.js';
import { paymentEventId, type PaymentEventType } from '../payments/payment-event-id.js';
import { holdResultCte, type StoredDecision } from '../payments/payment-hold-updates.js';
import {
  PAYMENT_RESOURCE_COLUMNS,
  toPaymentResource,
  type PaymentRow,
} from '../payments/payment-resource.js';
import { withTransaction, type Pool, type Queryable } from '../platform/database/db.js';
import { webhookFanout } from '../webhooks/webhook-fanout.js';

/**
 * A claimed hold job (issue 40): the engine's job (its id is the payment's), the authorized
 * payment, and the decision on it (null: none yet, so the job is the expiry at capture_before).
 */
export interface HoldJob extends ClaimedJob {
  payment: PaymentRow;
  decision: StoredDecision | null;
}

/** The payment and its decision, if any, joined by the engine's claim. */
const CLAIM_JOIN: ClaimJoin = {
  from: ', payments p LEFT JOIN payment_hold_decisions d ON d.payment_id = p.id',
  where: 'AND p.id = j.payment_id',
  returning: `${PAYMENT_RESOURCE_COLUMNS}, d.action, d.amount AS decision_amount,
              d.cancellation_reason AS decision_reason`,
};

/** Claims up to `limit` due hold jobs (the engine's claim): leased, attempts counted. */
export async function claimDueHoldJobs(
  db: Queryable,
  limit: number,
  leaseMs: number,
  maxAttempts: number,
): Promise<HoldJob[]> {
  const claimed = await claimJobs<
    PaymentRow & {
      action: 'capture' | 'cancel' | null;
      decision_amount: string | null;
      decision_reason: string | null;
    }
  >(db, HOLD_JOBS, CLAIM_JOIN, { limit, leaseMs, maxAttempts });
  return claimed.map(({ row, ...job }) => {
    const { action, decision_amount: amount, decision_reason: reason, ...payment } = row;
    return {
      ...job,
      payment,
      decision: action === null ? null : { action, amount, cancellation_reason: reason },
    };
  });
}

/** What the acquirer's answers came to: captured, released, or a capture refused (released). */
export type HoldFinal =
  | { status: 'settled'; amountCaptured: number }
  | { status: 'canceled'; reason: string | null }
  | { status: 'failed'; failureCode: string };

const RESULT_TYPES: Record<HoldFinal['status'], PaymentEventType> = {
  settled: 'payment.settled',
  canceled: 'payment.canceled',
  failed: 'payment.failed',
};

/** The completion's fenced delete of the job, if this claim still holds it ($1 id, $7 owner). */
const OWNED = ownedJobsCte(HOLD_JOBS, 'ARRAY[$1::uuid]', 'ARRAY[$7::uuid]');

const COMPLETE_HOLD_SQL = `WITH ${OWNED},
  ${holdResultCte(
    'moved',
    {
      id: '$1',
      status: '$2',
      amountCaptured: '$3',
      failureCode: '$4',
      reason: '$5',
      at: '$6',
    },
    { from: 'owned', id: 'job_id' },
  )}
  SELECT owned.job_id AS owned_id, moved.* FROM owned LEFT JOIN moved ON true`;

type MovedPayment = PaymentRow & { merchant_id: string };

/**
 * The hold's terminal transition, exactly once, by the claim that holds its job: the job removed
 * only if this claim still owns it and, in the same statement, requires_capture -> settled |
 * canceled | failed; its result event (`payment.settled` with amount_captured, `payment.canceled`
 * or `payment.failed`) into the outbox with the webhook fan-out, in the same transaction.
 */
export async function completeHold(
  pool: Pool,
  job: JobLease,
  final: HoldFinal,
  topic: string,
  now: Date,
  trace: TraceContext,
): Promise<CompletionOutcome> {
  return withTransaction(pool, async (client) => {
    const { rows } = await client.query<
      { owned_id: string } & { [K in keyof MovedPayment]: MovedPayment[K] | null }
    >(COMPLETE_HOLD_SQL, [
      job.id,
      final.status,
      final.status === 'settled' ? final.amountCaptured : null,
      final.status === 'failed' ? final.failureCode : null,
      final.status === 'canceled' ? final.reason : null,
      now,
      job.leaseOwner,
    ]);
    const result = rows[0];
    if (!result) return 'lease_lost';
    if (result.id === null) return 'unchanged';
    const row = result as MovedPayment;
    const type = RESULT_TYPES[final.status];
    await insertOutboxEvents(
      client,
      [
        {
          eventId: paymentEventId(row.id, type),
          type,
          aggregateId: row.id,
          topic,
          data: JSON.stringify(toPaymentResource(row)),
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

/**
 * Revives the dead hold jobs of replayed `payment.authorized` copies (a hold job's dead letter
 * put back by dlq:replay with a replay token): the payment ids revived. The job asks the
 * acquirer's books first (needs_inquiry), then carries out the payment's decision.
 */
export async function reviveHoldJobs(
  db: Queryable,
  revivals: readonly Revival[],
): Promise<ReadonlySet<string>> {
  return new Set((await reviveDeadJobs(db, HOLD_JOBS, revivals)).keys());
}
