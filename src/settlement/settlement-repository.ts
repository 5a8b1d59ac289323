import { randomUUID } from 'node:crypto';
import { paymentEventId, type PaymentEventType } from '../outbox/event-id.js';
import type { TraceContext } from '../outbox/trace-context.js';
import { withTransaction, type Pool, type Queryable } from '../platform/db.js';
import type { SourceRecord } from '../jobs/dead-letter.js';
import { toPaymentResource, type PaymentRow } from '../payments/payment-resource.js';

export type { SourceRecord };

export interface ClaimedJob {
  paymentId: string;
  /** This claim's token (settlement_jobs.lease_owner): every later write on the job matches it. */
  leaseOwner: string;
  eventId: string;
  /** Acquirer attempts started, this one included (counted by the claim, before the call). */
  attempts: number;
  /**
   * Every attempt is used up and the last one's outcome never reached the database (a crash, a
   * lease that ran out, a failed completion or dead-letter publish): dead-letter, do not call.
   */
  exhausted: boolean;
  /** The failure recorded by the previous attempt, if any. */
  lastFailure: Failure | null;
  amount: number;
  currency: string;
  source: string;
  paymentCreatedAt: Date;
  firstFailureAt: Date | null;
  record: SourceRecord;
}

/**
 * When a pending job may be claimed: once it is due and its lease (if any) has ended. The
 * expression of the settlement_jobs_claimable index (migration 0018), spelled the same here so
 * the planner uses it: leased jobs sort last, so a claim reads only the jobs it takes.
 */
const CLAIMABLE_AT = 'greatest(next_attempt_at, coalesce(locked_until, next_attempt_at))';

/** A claimed job as its later writes name it: the job and the claim's lease owner token. */
export type JobLease = Pick<ClaimedJob, 'paymentId' | 'leaseOwner'>;

/**
 * Claims up to `limit` due jobs for `leaseMs` in one statement (FOR UPDATE SKIP LOCKED: several
 * workers never claim the same job) and counts the attempt durably before the acquirer is
 * called. A job that has used `maxAttempts` already is claimed `exhausted` without counting: its
 * worker dead-letters it and never calls the acquirer again. A worker that dies holding a job
 * loses it when the lease ends, and the job is claimed again. The claim stamps a new owner token
 * on its jobs; a write that no longer matches it (the lease ran out and another claim took the
 * job) changes nothing and throws LeaseLostError.
 */
export async function claimDueJobs(
  db: Queryable,
  limit: number,
  leaseMs: number,
  maxAttempts: number,
): Promise<ClaimedJob[]> {
  const leaseOwner = randomUUID();
  const { rows } = await db.query<{
    payment_id: string;
    event_id: string;
    attempts: number;
    exhausted: boolean;
    last_error_class: string | null;
    last_error: string | null;
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
  }>({
    name: 'settlement.claim-due-jobs',
    text: `UPDATE settlement_jobs j
        SET attempts = CASE WHEN due.attempts < $3 THEN j.attempts + 1 ELSE j.attempts END,
            locked_until = now() + make_interval(secs => $2::double precision / 1000),
            lease_owner = $4
       FROM (SELECT payment_id, attempts FROM settlement_jobs
              WHERE state = 'pending' AND ${CLAIMABLE_AT} <= now()
              ORDER BY ${CLAIMABLE_AT} LIMIT $1
              FOR UPDATE SKIP LOCKED) due,
            payments p
      WHERE j.payment_id = due.payment_id AND p.id = j.payment_id
      RETURNING j.payment_id, j.event_id, j.attempts, due.attempts >= $3 AS exhausted,
                j.last_error_class, j.last_error, p.amount, p.currency, p.source, p.created_at,
                j.first_failure_at, j.source_topic, j.source_partition, j.source_offset,
                j.message_key, j.message_value`,
    values: [limit, leaseMs, maxAttempts, leaseOwner],
  });
  return rows.map((row) => ({
    paymentId: row.payment_id,
    leaseOwner,
    eventId: row.event_id,
    attempts: row.attempts,
    exhausted: row.exhausted,
    lastFailure:
      row.last_error_class === null
        ? null
        : { errorClass: row.last_error_class, message: row.last_error ?? '' },
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

/** One payment's acquirer answer, to be recorded by the claim that got it. */
export interface Completion extends JobLease {
  final: FinalStatus;
  /** The settlement attempt's span: the result event continues the payment's trace. */
  trace?: TraceContext;
}

/**
 * What a completion did: moved the payment (`completed`), found it already out of processing
 * (`unchanged`, its job removed all the same), or wrote nothing because the claim no longer
 * held the job's lease (`lease_lost`).
 */
export type CompletionOutcome = 'completed' | 'unchanged' | 'lease_lost';

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
): Promise<Map<string, CompletionOutcome>> {
  const byPayment = new Map(completions.map((c) => [c.paymentId, c]));
  if (byPayment.size === 0) return new Map();
  const ids = [...byPayment.keys()].sort();
  return withTransaction(pool, async (client) => {
    const { rows } = await client.query<
      { owned_id: string } & { [K in keyof PaymentRow]: PaymentRow[K] | null }
    >({
      name: 'settlement.complete-owned-payments',
      text: `WITH owned AS (
               DELETE FROM settlement_jobs j
                USING unnest($1::uuid[], $5::uuid[]) AS o(payment_id, lease_owner)
                WHERE j.payment_id = o.payment_id AND j.lease_owner = o.lease_owner
               RETURNING j.payment_id),
             moved AS (
               UPDATE payments p
                  SET status = d.status, failure_code = d.failure_code, updated_at = $4
                 FROM unnest($1::uuid[], $2::text[], $3::text[]) AS d(id, status, failure_code),
                      owned
                WHERE p.id = d.id AND owned.payment_id = d.id AND p.status = 'processing'
               RETURNING p.id, p.amount, p.currency, p.source, p.description, p.metadata,
                         p.status, p.failure_code, p.created_at)
           SELECT owned.payment_id AS owned_id, moved.*
             FROM owned LEFT JOIN moved ON moved.id = owned.payment_id`,
      values: [
        ids,
        ids.map((id) => byPayment.get(id)?.final.status),
        ids.map((id) => {
          const final = byPayment.get(id)?.final;
          return final?.status === 'failed' ? final.failureCode : null;
        }),
        now,
        ids.map((id) => byPayment.get(id)?.leaseOwner),
      ],
    });
    const outcomes = new Map<string, CompletionOutcome>(ids.map((id) => [id, 'lease_lost']));
    const moved: PaymentRow[] = [];
    for (const { owned_id: ownedId, ...row } of rows) {
      if (row.id === null) {
        outcomes.set(ownedId, 'unchanged');
      } else {
        outcomes.set(ownedId, 'completed');
        moved.push(row as PaymentRow);
      }
    }
    if (moved.length > 0) {
      const events = moved.map((row) => {
        const type: PaymentEventType =
          row.status === 'settled' ? 'payment.settled' : 'payment.failed';
        return {
          eventId: paymentEventId(row.id, type),
          type,
          paymentId: row.id,
          data: JSON.stringify(toPaymentResource(row)),
          trace: byPayment.get(row.id)?.trace,
        };
      });
      await client.query({
        name: 'settlement.insert-result-events',
        text: `INSERT INTO outbox (event_id, event_type, aggregate_id, topic, data, created_at,
                             traceparent, tracestate)
         SELECT e.event_id, e.event_type, e.aggregate_id, $4, e.data, $5, e.traceparent,
                e.tracestate
           FROM unnest($1::uuid[], $2::text[], $3::uuid[], $6::jsonb[], $7::text[], $8::text[])
                AS e(event_id, event_type, aggregate_id, data, traceparent, tracestate)`,
        values: [
          events.map((e) => e.eventId),
          events.map((e) => e.type),
          events.map((e) => e.paymentId),
          topic,
          now,
          events.map((e) => e.data),
          events.map((e) => e.trace?.traceparent ?? null),
          events.map((e) => e.trace?.tracestate ?? null),
        ],
      });
    }
    return outcomes;
  });
}

export interface Failure {
  errorClass: string;
  message: string;
}

/** When the earliest pending job is due, to sleep exactly until then. */
export async function nextDueAt(db: Queryable): Promise<Date | null> {
  const { rows } = await db.query<{ due: Date | null }>({
    name: 'settlement.next-due-at',
    text: `SELECT ${CLAIMABLE_AT} AS due FROM settlement_jobs
            WHERE state = 'pending' ORDER BY ${CLAIMABLE_AT} LIMIT 1`,
  });
  return rows[0]?.due ?? null;
}
