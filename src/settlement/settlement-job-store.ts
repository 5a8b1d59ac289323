import { paymentEventId, type PaymentEventType } from '../payments/payment-event-id.js';
import { insertOutboxEvents } from '../outbox/outbox-writer.js';
import { webhookFanout } from '../webhooks/webhook-fanout.js';
import type { TraceContext } from '../outbox/trace-context.js';
import { withTransaction, type Pool, type Queryable } from '../platform/database/db.js';
import type { SourceRecord } from '../jobs/dead-letters/dead-letter.js';
import { claimJobs, ownedJobsCte, type ClaimJoin } from '../jobs/job-store.js';
import { SETTLEMENT_JOBS, type ClaimedJob, type JobLease } from '../jobs/job-table.js';
import type { CompletionOutcome } from '../jobs/job-worker.js';
import { toPaymentResource, type PaymentRow } from '../payments/payment-resource.js';
import { paymentCompletionCte } from '../payments/payment-updates.js';

/** A claimed settlement job: the engine's job (its id is the payment's) and the payment. */
export interface SettlementJob extends ClaimedJob {
  paymentId: string;
  /** The payment.created event's id: the dead letter's. */
  eventId: string;
  amount: number;
  currency: string;
  source: string;
  /** capture_method manual (issue 40): authorized (a hold), not charged. */
  manual: boolean;
  paymentCreatedAt: Date;
  /** The payment.created record as consumed: the dead letter carries it. */
  record: SourceRecord;
}

/** The payment each settlement job works on, joined by the engine's claim. */
const CLAIM_JOIN: ClaimJoin = {
  from: ', payments p',
  where: 'AND p.id = j.payment_id',
  returning: `j.event_id, p.amount, p.currency, p.source, p.capture_method, p.created_at, j.source_topic,
                j.source_partition, j.source_offset, j.message_key, j.message_value`,
};

/**
 * Claims up to `limit` due settlement jobs with their payments (the engine's claim, job-store):
 * leased, attempts counted before the acquirer is called, `exhausted` past `maxAttempts`.
 */
export async function claimDueJobs(
  db: Queryable,
  limit: number,
  leaseMs: number,
  maxAttempts: number,
): Promise<SettlementJob[]> {
  const claimed = await claimJobs<{
    event_id: string;
    amount: string;
    currency: string;
    source: string;
    capture_method: string;
    created_at: Date;
    source_topic: string;
    source_partition: number;
    source_offset: string;
    message_key: string | null;
    message_value: string;
  }>(db, SETTLEMENT_JOBS, CLAIM_JOIN, { limit, leaseMs, maxAttempts });
  return claimed.map(({ row, ...job }) => ({
    ...job,
    paymentId: job.id,
    eventId: row.event_id,
    amount: Number(row.amount),
    currency: row.currency,
    source: row.source,
    manual: row.capture_method === 'manual',
    paymentCreatedAt: row.created_at,
    record: {
      topic: row.source_topic,
      partition: row.source_partition,
      offset: row.source_offset,
      key: row.message_key,
      value: row.message_value,
    },
  }));
}

/** The completion's fenced delete of the jobs its claims still hold ($1 ids, $5 owners). */
const OWNED = ownedJobsCte(SETTLEMENT_JOBS, '$1', '$5');

/**
 * The owned jobs removed and exactly their payments moved (payments' part, $1 ids, $2 statuses,
 * $3 failure codes, $4 time, $6 authorization window), and a hold job for each authorized one,
 * due at its capture_before (its expiry, issue 40): one row per owned job, with its payment's
 * row if it moved.
 */
const COMPLETE_OWNED_PAYMENTS_SQL = `WITH ${OWNED},
  ${paymentCompletionCte(
    'moved',
    { ids: '$1', statuses: '$2', failureCodes: '$3', at: '$4', authorizationWindow: '$6' },
    { from: 'owned', id: 'job_id' },
  )}, holds AS (
    INSERT INTO hold_jobs (payment_id, next_attempt_at)
    SELECT id, capture_before FROM moved WHERE status = 'requires_capture'
    RETURNING payment_id
  )
  SELECT owned.job_id AS owned_id, moved.*
    FROM owned LEFT JOIN moved ON moved.id = owned.job_id`;

/** A payment the completion moved, with its merchant (whose webhook endpoints get the event). */
type MovedPayment = PaymentRow & { merchant_id: string };

export type FinalStatus =
  | { status: 'settled' }
  | { status: 'requires_capture' }
  | { status: 'failed'; failureCode: string };

/** The result event of a settlement completion's new status. */
const RESULT_TYPES: Record<string, PaymentEventType> = {
  settled: 'payment.settled',
  requires_capture: 'payment.authorized',
  failed: 'payment.failed',
};

/** One payment's acquirer answer, to be recorded by the claim that got it. */
export interface Completion extends JobLease {
  final: FinalStatus;
  /** The settlement attempt's span: the result event continues the payment's trace. */
  trace?: TraceContext;
}

/**
 * The terminal transitions of a group of payments, exactly once each (I4), in ONE transaction
 * with one multi-row statement per step: the jobs this claim still owns removed and, for
 * exactly those, processing -> settled | failed where still processing (one statement); then a
 * result event into the outbox for each payment that changed (same transaction as its status).
 * A completion whose lease another claim took writes nothing: only the job's owner decides.
 */
export async function completePayments(
  pool: Pool,
  completions: readonly Completion[],
  topic: string,
  now: Date,
  authorizationWindowSeconds = 604_800,
): Promise<Map<string, CompletionOutcome>> {
  const byPayment = new Map(completions.map((c) => [c.id, c]));
  if (byPayment.size === 0) return new Map();
  const ids = [...byPayment.keys()].sort();
  return withTransaction(pool, async (client) => {
    const { rows } = await client.query<
      { owned_id: string } & { [K in keyof MovedPayment]: MovedPayment[K] | null }
    >({
      name: 'settlement.complete-owned-payments',
      text: COMPLETE_OWNED_PAYMENTS_SQL,
      values: [
        ids,
        ids.map((id) => byPayment.get(id)?.final.status),
        ids.map((id) => {
          const final = byPayment.get(id)?.final;
          return final?.status === 'failed' ? final.failureCode : null;
        }),
        now,
        ids.map((id) => byPayment.get(id)?.leaseOwner),
        authorizationWindowSeconds,
      ],
    });
    const outcomes = new Map<string, CompletionOutcome>(ids.map((id) => [id, 'lease_lost']));
    const moved: MovedPayment[] = [];
    for (const { owned_id: ownedId, ...row } of rows) {
      if (row.id === null) {
        outcomes.set(ownedId, 'unchanged');
      } else {
        outcomes.set(ownedId, 'completed');
        moved.push(row as MovedPayment);
      }
    }
    await insertOutboxEvents(
      client,
      moved.map((row) => {
        const type = RESULT_TYPES[row.status] ?? 'payment.failed';
        return {
          eventId: paymentEventId(row.id, type),
          type,
          aggregateId: row.id,
          topic,
          data: JSON.stringify(toPaymentResource(row)),
          createdAt: now,
          trace: byPayment.get(row.id)?.trace,
          merchantId: row.merchant_id,
        };
      }),
      webhookFanout,
    );
    return outcomes;
  });
}
