import { randomUUID } from 'node:crypto';
import { refundEventId, type RefundEventType } from '../outbox/refund-event-id.js';
import type { TraceContext } from '../outbox/trace-context.js';
import { withTransaction, type Pool, type Queryable } from '../platform/db.js';
import { LeaseLostError, type JobWrite } from '../jobs/lease-lost.js';
import { REFUND_COLUMNS, toRefundResource, type RefundRow } from './refund-resource.js';

export interface RefundFailure {
  errorClass: string;
  message: string;
}

export interface ClaimedRefundJob {
  refund: RefundRow;
  /** This claim's token (refund_jobs.lease_owner): every later write on the job matches it. */
  leaseOwner: string;
  /** Acquirer attempts started, this one included (counted by the claim, before the call). */
  attempts: number;
  /**
   * Every attempt is used up and the last one's outcome never reached the database (a crash, a
   * lease that ran out, a failed completion): dead-letter, do not call the acquirer.
   */
  exhausted: boolean;
  /** The failure recorded by the previous attempt, if any. */
  lastFailure: RefundFailure | null;
  firstFailureAt: Date | null;
  /** The payment's source: the simulator's refund behaviour is keyed on it. */
  source: string;
  /** The refund POST's trace context: every attempt continues it. */
  trace: TraceContext;
}

/** A claimed refund job as its later writes name it: the refund and the claim's token. */
export interface RefundLease {
  refund: Pick<RefundRow, 'id'>;
  leaseOwner: string;
}

/** Throws LeaseLostError when a write on `job` matched no row (the claim lost the job). */
function assertOwned(rowCount: number | null, job: RefundLease, write: JobWrite): void {
  if (rowCount === 0) throw new LeaseLostError('refund', write, job.refund.id);
}

/**
 * Claims up to `limit` due refund jobs for `leaseMs` (FOR UPDATE SKIP LOCKED: two workers never
 * claim the same job) and counts the attempt durably before the acquirer is called, as the
 * charges' claim does (DESIGN 45): a job that has used `maxAttempts` already is claimed
 * `exhausted` without counting, and its worker dead-letters it without calling the acquirer. A
 * worker that dies holding a job loses it when the lease ends; the next call to the acquirer
 * carries the same key, so it is never refunded twice. The claim stamps a new owner token on its
 * jobs; a later write that no longer matches it changes nothing and throws LeaseLostError.
 */
export async function claimDueRefundJobs(
  db: Queryable,
  limit: number,
  leaseMs: number,
  maxAttempts: number,
): Promise<ClaimedRefundJob[]> {
  const leaseOwner = randomUUID();
  const columns = REFUND_COLUMNS.split(', ')
    .map((c) => `r.${c}`)
    .join(', ');
  const { rows } = await db.query<
    RefundRow & {
      attempts: number;
      exhausted: boolean;
      last_error_class: string | null;
      last_error: string | null;
      first_failure_at: Date | null;
      source: string;
      traceparent: string | null;
      tracestate: string | null;
    }
  >(
    `UPDATE refund_jobs j
        SET attempts = CASE WHEN due.attempts < $3 THEN j.attempts + 1 ELSE j.attempts END,
            locked_until = now() + make_interval(secs => $2::double precision / 1000),
            lease_owner = $4
       FROM (SELECT refund_id, attempts FROM refund_jobs
              WHERE state = 'pending' AND next_attempt_at <= now()
                AND (locked_until IS NULL OR locked_until <= now())
              ORDER BY next_attempt_at LIMIT $1
              FOR UPDATE SKIP LOCKED) due,
            refunds r, payments p
      WHERE j.refund_id = due.refund_id AND r.id = j.refund_id AND p.id = r.payment_id
      RETURNING ${columns}, j.attempts, due.attempts >= $3 AS exhausted, j.last_error_class,
                j.last_error, j.first_failure_at, p.source, j.traceparent, j.tracestate`,
    [limit, leaseMs, maxAttempts, leaseOwner],
  );
  return rows.map(
    ({
      attempts,
      exhausted,
      last_error_class: lastErrorClass,
      last_error: lastError,
      first_failure_at,
      source,
      traceparent,
      tracestate,
      ...refund
    }) => ({
      refund,
      leaseOwner,
      attempts,
      exhausted,
      lastFailure:
        lastErrorClass === null ? null : { errorClass: lastErrorClass, message: lastError ?? '' },
      firstFailureAt: first_failure_at,
      source,
      trace: { traceparent, tracestate },
    }),
  );
}

export type RefundFinal = { status: 'succeeded' } | { status: 'failed'; failureCode: string };

/** What a completion did: see CompletionOutcome (settlement-repository). */
export type RefundCompletionOutcome = 'completed' | 'unchanged' | 'lease_lost';

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
  job: RefundLease,
  final: RefundFinal,
  topic: string,
  now: Date,
  trace: TraceContext,
): Promise<RefundCompletionOutcome> {
  const refundId = job.refund.id;
  const returned = REFUND_COLUMNS.split(', ')
    .map((c) => `r.${c}`)
    .join(', ');
  return withTransaction(pool, async (client) => {
    const failureCode = final.status === 'failed' ? final.failureCode : null;
    const { rows } = await client.query<
      { owned_id: string } & { [K in keyof RefundRow]: RefundRow[K] | null }
    >(
      `WITH owned AS (
         DELETE FROM refund_jobs WHERE refund_id = $1 AND lease_owner = $5 RETURNING refund_id),
       moved AS (
         UPDATE refunds r SET status = $2, failure_code = $3, updated_at = $4
           FROM owned WHERE r.id = owned.refund_id AND r.status = 'pending'
         RETURNING ${returned})
       SELECT owned.refund_id AS owned_id, moved.* FROM owned LEFT JOIN moved ON true`,
      [refundId, final.status, failureCode, now, job.leaseOwner],
    );
    const result = rows[0];
    if (!result) return 'lease_lost';
    if (result.id === null) return 'unchanged';
    const row = result as RefundRow;
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
    return 'completed';
  });
}

/**
 * Try again after `delayMs`, lease released: a transient acquirer failure with attempts left,
 * or a failed step (the completion's transaction, say), whose attempt the claim already
 * counted. The failure is kept for the dead letter. Throws LeaseLostError (nothing written)
 * when another claim holds the job.
 */
export async function scheduleRefundRetry(
  db: Queryable,
  job: RefundLease,
  failure: RefundFailure,
  delayMs: number,
  write: 'retry' | 'failure' = 'retry',
): Promise<void> {
  const { rowCount } = await db.query(
    `UPDATE refund_jobs
        SET next_attempt_at = now() + make_interval(secs => $2::double precision / 1000),
            locked_until = NULL, lease_owner = NULL,
            first_failure_at = coalesce(first_failure_at, now()),
            last_failure_at = now(), last_error_class = $3, last_error = $4
      WHERE refund_id = $1 AND lease_owner = $5`,
    [job.refund.id, delayMs, failure.errorClass, failure.message.slice(0, 1_000), job.leaseOwner],
  );
  assertOwned(rowCount, job, write);
}

/**
 * Retries exhausted: the job stays, dead, with its last error; the refund stays pending and its
 * amount stays reserved (the acquirer may have refunded: releasing it could pay out twice),
 * visibly unresolved until an operator revives the job. Throws LeaseLostError (nothing
 * written) when another claim holds the job.
 */
export async function markRefundDead(
  db: Queryable,
  job: RefundLease,
  failure: RefundFailure,
): Promise<void> {
  const { rowCount } = await db.query(
    `UPDATE refund_jobs
        SET state = 'dead', locked_until = NULL, lease_owner = NULL,
            first_failure_at = coalesce(first_failure_at, now()),
            last_failure_at = now(), last_error_class = $2, last_error = $3
      WHERE refund_id = $1 AND lease_owner = $4`,
    [job.refund.id, failure.errorClass, failure.message.slice(0, 1_000), job.leaseOwner],
  );
  assertOwned(rowCount, job, 'dead');
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
