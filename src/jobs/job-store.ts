import { randomUUID } from 'node:crypto';
import type { Queryable } from '../platform/db.js';
import { LeaseLostError, type JobWrite } from './lease-lost.js';
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
): Promise<(ClaimedJob & { row: R })[]> {
  const { table, idColumn } = jobs;
  const leaseOwner = randomUUID();
  const { rows } = await db.query<JobColumns & R>({
    name: `${jobs.kind}.claim`,
    text: `UPDATE ${table} j
        SET attempts = CASE WHEN due.attempts < $3 THEN j.attempts + 1 ELSE j.attempts END,
            locked_until = now() + make_interval(secs => $2::double precision / 1000),
            lease_owner = $4
       FROM (SELECT ${idColumn}, attempts FROM ${table}
              WHERE state = 'pending' AND ${CLAIMABLE_AT} <= now()
              ORDER BY ${CLAIMABLE_AT} LIMIT $1
              FOR UPDATE SKIP LOCKED) due${join.from}
      WHERE j.${idColumn} = due.${idColumn} ${join.where}
      RETURNING j.${idColumn} AS job_id, j.attempts, due.attempts >= $3 AS exhausted,
                j.last_error_class, j.last_error, j.first_failure_at, ${join.returning}`,
    values: [limit, leaseMs, maxAttempts, leaseOwner],
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
): Promise<void> {
  const { rowCount } = await db.query({
    name: `${jobs.kind}.retry`,
    text: `UPDATE ${jobs.table}
        SET next_attempt_at = now() + make_interval(secs => $2::double precision / 1000),
            locked_until = NULL, lease_owner = NULL,
            first_failure_at = coalesce(first_failure_at, now()),
            last_failure_at = now(), last_error_class = $3, last_error = $4
      WHERE ${jobs.idColumn} = $1 AND lease_owner = $5`,
    values: [job.id, delayMs, failure.errorClass, failure.message.slice(0, 1_000), job.leaseOwner],
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
): Promise<{ replayToken: string | null }> {
  const { rows, rowCount } = await db.query<{ replay_token: string | null }>({
    name: `${jobs.kind}.dead`,
    text: `UPDATE ${jobs.table}
        SET state = 'dead', locked_until = NULL, lease_owner = NULL,
            first_failure_at = coalesce(first_failure_at, now()),
            last_failure_at = now(), last_error_class = $2, last_error = $3
      WHERE ${jobs.idColumn} = $1 AND lease_owner = $4
      RETURNING replay_token`,
    values: [job.id, failure.errorClass, failure.message.slice(0, 1_000), job.leaseOwner],
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

/** When the earliest pending job may be claimed, to sleep exactly until then. */
export async function nextJobDueAt(db: Queryable, jobs: JobTable): Promise<Date | null> {
  const { rows } = await db.query<{ due: Date | null }>({
    name: `${jobs.kind}.next-due-at`,
    text: `SELECT ${CLAIMABLE_AT} AS due FROM ${jobs.table}
            WHERE state = 'pending' ORDER BY ${CLAIMABLE_AT} LIMIT 1`,
  });
  return rows[0]?.due ?? null;
}

/** A dead job to revive, and the dlq:replay token of the copy that asks for it. */
export interface Revival {
  id: string;
  token: string;
}

/**
 * dlq:replay's copies: a dead job comes back (pending, attempts reset) once per replay token. A
 * stray duplicate has no token; a second delivery of the same replayed copy has a token the job
 * has already been revived with. A job that is not dead is left alone. Returns the revived job
 * ids with the token that revived each.
 */
export async function reviveDeadJobs(
  db: Queryable,
  jobs: JobTable,
  revivals: readonly Revival[],
): Promise<Map<string, string>> {
  const lastTokenPerJob = new Map(revivals.map((r) => [r.id, r.token]));
  if (lastTokenPerJob.size === 0) return new Map();
  const { rows } = await db.query<{ job_id: string; replay_token: string }>({
    name: `${jobs.kind}.revive`,
    text: `UPDATE ${jobs.table} j
        SET state = 'pending', attempts = 0, next_attempt_at = now(), locked_until = NULL,
            lease_owner = NULL, replay_token = r.token, revived_at = now()
       FROM unnest($1::uuid[], $2::text[]) AS r(job_id, token)
      WHERE j.${jobs.idColumn} = r.job_id AND j.state = 'dead'
        AND j.replay_token IS DISTINCT FROM r.token
     RETURNING j.${jobs.idColumn} AS job_id, j.replay_token`,
    values: [[...lastTokenPerJob.keys()], [...lastTokenPerJob.values()]],
  });
  return new Map(rows.map((row) => [row.job_id, row.replay_token]));
}
