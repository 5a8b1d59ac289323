import { randomUUID } from 'node:crypto';
import type { Queryable } from '../platform/database/db.js';
import { dueSubquery, filterSql, groupValues, type ClaimFilter } from './claim-filter.js';
import { LeaseLostError, type JobWrite } from './lease-lost.js';

export type { ClaimFilter } from './claim-filter.js';
import {
  CLAIMABLE_AT,
  type ClaimedJob,
  type Failure,
  type JobLease,
  type JobTable,
} from './job-table.js';

/**
 * The job engine's statements, one spelling for every kind (job-table.ts): claim, retry, dead,
 * revive, next due, and the fenced delete a completion starts with. Statement names carry the
 * kind, so each is prepared once per connection.
 */

/** What a kind's claim joins and returns besides the job columns (its resource). */
export interface ClaimJoin {
  /** `, table alias, ...` joined to the claimed job `j` (trusted SQL, never from input). */
  from: string;
  /** `AND ...` tying the joined tables to `j`. */
  where: string;
  /** The joined columns returned, `alias.column, ...`. */
  returning: string;
}

export interface ClaimLimits {
  limit: number;
  leaseMs: number;
  maxAttempts: number;
}

/** The job columns of a claimed row, as returned by the claim. */
interface JobColumns {
  job_id: string;
  attempts: number;
  exhausted: boolean;
  last_error_class: string | null;
  last_error: string | null;
  first_failure_at: Date | null;
  needs_inquiry: boolean;
  last_inquiry: string | null;
  not_sent: number;
}

/**
 * Claims up to `limit` due jobs for `leaseMs` in one statement (FOR UPDATE SKIP LOCKED: two
 * workers never claim the same job) and counts the attempt durably before the work starts. A job
 * that has used `maxAttempts` already is claimed `exhausted` without counting: its worker
 * dead-letters it and never attempts it again, so no path exceeds the limit (DESIGN 53). The
 * claim stamps a new owner token on its jobs; a later write that no longer matches it changes
 * nothing and throws LeaseLostError. Returns each job with the joined row (`R`, its columns as
 * named in `join.returning`).
 */
// The caller names the row its join returns: R is a cast, as pg's own query<R> is.
// eslint-disable-next-line @typescript-eslint/no-unnecessary-type-parameters
export async function claimJobs<R>(
  db: Queryable,
  jobs: JobTable,
  join: ClaimJoin,
  { limit, leaseMs, maxAttempts }: ClaimLimits,
  filter?: ClaimFilter,
): Promise<(ClaimedJob & { row: R })[]> {
  const { table, idColumn } = jobs;
  const leaseOwner = randomUUID();
  const extra = filterSql(jobs, filter, 5);
  const { rows } = await db.query<JobColumns & R>({
    name: `${jobs.kind}.claim`,
    text: `UPDATE ${table} j
        SET attempts = CASE WHEN due.attempts < $3 THEN j.attempts + 1 ELSE j.attempts END,
            locked_until = now() + make_interval(secs => $2::double precision / 1000),
            lease_owner = $4
       FROM ${dueSubquery(jobs, extra.where, filter, 5 + extra.values.length)} due${join.from}
      WHERE j.${idColumn} = due.${idColumn} ${join.where}
      RETURNING j.${idColumn} AS job_id, j.attempts, due.attempts >= $3 AS exhausted,
                j.last_error_class, j.last_error, j.first_failure_at, j.needs_inquiry,
                j.last_inquiry, j.not_sent, ${join.returning}`,
    values: [limit, leaseMs, maxAttempts, leaseOwner, ...extra.values, ...groupValues(filter)],
  });
  return rows.map((row) => ({
    id: row.job_id,
    leaseOwner,
    attempts: row.attempts,
    exhausted: row.exhausted,
    lastFailure:
      row.last_error_class === null
        ? null
        : { errorClass: row.last_error_class, message: row.last_error ?? '' },
    firstFailureAt: row.first_failure_at,
    needsInquiry: row.needs_inquiry,
    lastInquiry: row.last_inquiry,
    notSent: row.not_sent,
    row,
  }));
}

/** Throws LeaseLostError when a write on `job` matched no row (the claim lost the job). */
function assertOwned(
  rowCount: number | null,
  jobs: JobTable,
  job: JobLease,
  write: JobWrite,
): void {
  if (rowCount === 0) throw new LeaseLostError(jobs.kind, write, job.id);
}

/**
 * How a retry marks the job besides its failure (DESIGN 106): `giveBack` returns the attempt the
 * claim counted (the call never went out, or was only an inquiry); `notSent` counts a call that
 * never reached the other side and leaves the retry window unstarted; `needsInquiry` sets or
 * clears the inquiry as the next step (absent: unchanged); `lastInquiry` records an inquiry's
 * answer; `keepLastError` keeps the job's last error if any (not an attempt, DESIGN 112).
 */
export interface RetryMarks {
  giveBack?: boolean;
  notSent?: boolean;
  needsInquiry?: boolean;
  lastInquiry?: string;
  keepLastError?: boolean;
}

/**
 * Try again after `delayMs`, lease released: a transient failure with attempts left (`retry`),
 * or a failed step after the attempt (`failure`: the completion's transaction, say), whose
 * attempt the claim already counted. The failure is kept for the dead letter. Throws
 * LeaseLostError (nothing written) when another claim holds the job.
 */
export async function retryJob(
  db: Queryable,
  jobs: JobTable,
  job: JobLease,
  failure: Failure,
  delayMs: number,
  write: 'retry' | 'failure' = 'retry',
  marks: RetryMarks = {},
): Promise<void> {
  const { rowCount } = await db.query({
    name: `${jobs.kind}.retry`,
    text: `UPDATE ${jobs.table}
        SET next_attempt_at = now() + make_interval(secs => $2::double precision / 1000),
            locked_until = NULL, lease_owner = NULL,
            attempts = CASE WHEN $6 THEN greatest(attempts - 1, 0) ELSE attempts END,
            not_sent = not_sent + CASE WHEN $7 THEN 1 ELSE 0 END,
            first_failure_at = CASE WHEN $7 THEN first_failure_at
                                    ELSE coalesce(first_failure_at, now()) END,
            needs_inquiry = coalesce($8, needs_inquiry),
            last_inquiry = coalesce($9, last_inquiry),
            last_failure_at = now(), last_error = CASE WHEN $10 THEN coalesce(last_error, $4) ELSE $4 END,
            last_error_class = CASE WHEN $10 THEN coalesce(last_error_class, $3) ELSE $3 END
      WHERE ${jobs.idColumn} = $1 AND lease_owner = $5`,
    values: [
      job.id,
      delayMs,
      failure.errorClass,
      failure.message.slice(0, 1_000),
      job.leaseOwner,
      marks.giveBack ?? false,
      marks.notSent ?? false,
      marks.needsInquiry ?? null,
      marks.lastInquiry ?? null,
      marks.keepLastError ?? false,
    ],
  });
  assertOwned(rowCount, jobs, job, write);
}

/**
 * Attempts exhausted: the job stays, dead, with its last error, until `dlq:replay` revives it;
 * its resource stays visibly unresolved (I7). Returns the job's replay token (the dead letter's
 * dedup key carries it). Throws LeaseLostError (nothing written) when another claim holds it.
 */
export async function markJobDead(
  db: Queryable,
  jobs: JobTable,
  job: JobLease,
  failure: Failure,
  lastInquiry?: string,
): Promise<{ replayToken: string | null }> {
  const { rows, rowCount } = await db.query<{ replay_token: string | null }>({
    name: `${jobs.kind}.dead`,
    text: `UPDATE ${jobs.table}
        SET state = 'dead', locked_until = NULL, lease_owner = NULL, needs_inquiry = false,
            first_failure_at = coalesce(first_failure_at, now()),
            last_inquiry = coalesce($5, last_inquiry),
            last_failure_at = now(), last_error_class = $2, last_error = $3
      WHERE ${jobs.idColumn} = $1 AND lease_owner = $4
      RETURNING replay_token`,
    values: [
      job.id,
      failure.errorClass,
      failure.message.slice(0, 1_000),
      job.leaseOwner,
      lastInquiry ?? null,
    ],
  });
  assertOwned(rowCount, jobs, job, 'dead');
  return { replayToken: rows[0]?.replay_token ?? null };
}

/**
 * The first part of a completion's statement: a CTE `owned` that deletes the jobs this claim
 * still holds (ids in parameter `$ids`, owner tokens in `$owners`, both arrays) and returns
 * their ids as `job_id`. The completion joins its resource writes to `owned`, so a claim that
 * lost its lease changes nothing. Finished jobs are deleted, not kept: the resource's status
 * and its outbox event are the record of the work.
 */
export function ownedJobsCte(jobs: JobTable, ids: string, owners: string): string {
  return `owned AS (
       DELETE FROM ${jobs.table} j
        USING unnest(${ids}::uuid[], ${owners}::uuid[]) AS o(job_id, lease_owner)
        WHERE j.${jobs.idColumn} = o.job_id AND j.lease_owner = o.lease_owner
       RETURNING j.${jobs.idColumn} AS job_id)`;
}

/**
 * When the earliest pending job may be claimed, to sleep exactly until then; under a kind's
 * filter, the earliest its claim would take (not one held back by order or a full group).
 */
export async function nextJobDueAt(
  db: Queryable,
  jobs: JobTable,
  filter?: ClaimFilter,
): Promise<Date | null> {
  const extra = filterSql(jobs, filter, 1);
  const { rows } = await db.query<{ due: Date | null }>({
    name: `${jobs.kind}.next-due-at`,
    text: `SELECT ${CLAIMABLE_AT} AS due FROM ${jobs.table}
            WHERE state = 'pending'${extra.where} ORDER BY ${CLAIMABLE_AT} LIMIT 1`,
    values: extra.values,
  });
  return rows[0]?.due ?? null;
}

export { reviveDeadJobs, type Revival } from './job-revive.js';
