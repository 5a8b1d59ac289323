import type { Queryable } from '../platform/db.js';
import { LeaseLostError } from '../jobs/lease-lost.js';
import type { Failure, JobLease } from './settlement-repository.js';

/**
 * The writes of a settlement job that failed: retry later, record the failure, or dead. Each is
 * fenced by the claim's lease owner token in its one statement: a worker whose lease ran out
 * changes nothing (LeaseLostError), DESIGN 45.
 */

/** Throws LeaseLostError when a write on `job` matched no row (the claim lost the job). */
function assertOwned(rowCount: number | null, job: JobLease, write: 'retry' | 'failure' | 'dead') {
  if (rowCount === 0) throw new LeaseLostError('settlement', write, job.paymentId);
}

/** A transient failure with attempts left: try again after `delayMs`, lease released. */
export async function scheduleRetry(
  db: Queryable,
  job: JobLease,
  failure: Failure,
  delayMs: number,
): Promise<void> {
  const { rowCount } = await db.query({
    name: 'settlement.schedule-retry',
    text: `UPDATE settlement_jobs
        SET next_attempt_at = now() + make_interval(secs => $2::double precision / 1000),
            locked_until = NULL, lease_owner = NULL,
            first_failure_at = coalesce(first_failure_at, now()),
            last_failure_at = now(), last_error_class = $3, last_error = $4
      WHERE payment_id = $1 AND lease_owner = $5`,
    values: [
      job.paymentId,
      delayMs,
      failure.errorClass,
      failure.message.slice(0, 1_000),
      job.leaseOwner,
    ],
  });
  assertOwned(rowCount, job, 'retry');
}

/** A failure after the acquirer answered: recorded for the dead letter, the lease kept. */
export async function recordFailure(db: Queryable, job: JobLease, failure: Failure): Promise<void> {
  const { rowCount } = await db.query(
    `UPDATE settlement_jobs
        SET first_failure_at = coalesce(first_failure_at, now()),
            last_failure_at = now(), last_error_class = $2, last_error = $3
      WHERE payment_id = $1 AND lease_owner = $4`,
    [job.paymentId, failure.errorClass, failure.message.slice(0, 1_000), job.leaseOwner],
  );
  assertOwned(rowCount, job, 'failure');
}

/**
 * Retries exhausted: the job stays, dead, with its last error; the payment stays in processing,
 * visibly unresolved (I7), until `dlq:replay` revives it. Returns the failure times for the
 * dead letter's headers.
 */
export async function markDead(
  db: Queryable,
  job: JobLease,
  failure: Failure,
): Promise<{ firstFailureAt: Date; lastFailureAt: Date }> {
  const { rows, rowCount } = await db.query<{ first_failure_at: Date; last_failure_at: Date }>(
    `UPDATE settlement_jobs
        SET state = 'dead', locked_until = NULL, lease_owner = NULL,
            first_failure_at = coalesce(first_failure_at, now()),
            last_failure_at = now(), last_error_class = $2, last_error = $3
      WHERE payment_id = $1 AND lease_owner = $4
      RETURNING first_failure_at, last_failure_at`,
    [job.paymentId, failure.errorClass, failure.message.slice(0, 1_000), job.leaseOwner],
  );
  assertOwned(rowCount, job, 'dead');
  const row = rows[0];
  const now = new Date();
  return {
    firstFailureAt: row?.first_failure_at ?? now,
    lastFailureAt: row?.last_failure_at ?? now,
  };
}
