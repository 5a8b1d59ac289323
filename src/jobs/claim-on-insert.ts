import type { ClaimedJob } from './job-table.js';

/**
 * Claim on insert: an intake that records jobs claims them in the same statement, so a job that
 * is taken at once costs no claim statement (and no second row version of the job). The
 * engine's rules hold as in claimJobs (job-store.ts); a worker hands such jobs to its loop with
 * JobWorker.reserve and adopt.
 */
/**
 * An intake that claims the jobs it records (instead of a later claim statement): the owner
 * token and lease of that claim, and how many of the recorded jobs it takes (the worker's slots
 * held for them). The first `slots` jobs inserted are claimed exactly as claimJobs claims a job
 * that has never run: attempt 1 counted before the work, leased to `owner` until `leaseMs` from
 * now (DESIGN 53, 59). A crash after the commit leaves them leased; the lease runs out and any
 * worker's claim takes them, as for a claimed job.
 */
export interface IntakeClaim {
  slots: number;
  owner: string;
  leaseMs: number;
}

/**
 * The job columns an intake's INSERT sets, and their values for the row numbered `ordinal`
 * (a column of the insert's source, from 1): claimed as IntakeClaim says (parameters `count`,
 * `leaseMs`, `owner`), or left for a claim (the columns' defaults: attempts 0, no lease).
 */
export function claimOnInsertSql(
  ordinal: string,
  count: string,
  leaseMs: string,
  owner: string,
): { columns: string; values: string } {
  const claimed = `${ordinal} <= ${count}`;
  return {
    columns: 'attempts, locked_until, lease_owner',
    values: `CASE WHEN ${claimed} THEN 1 ELSE 0 END,
             CASE WHEN ${claimed}
                  THEN now() + make_interval(secs => ${leaseMs}::double precision / 1000) END,
             CASE WHEN ${claimed} THEN ${owner}::uuid END`,
  };
}

/** The engine's part of a job an intake claimed (claimOnInsertSql): its first attempt. */
export function claimedOnInsert(id: string, claim: IntakeClaim): ClaimedJob {
  return {
    id,
    leaseOwner: claim.owner,
    attempts: 1,
    exhausted: false,
    lastFailure: null,
    firstFailureAt: null,
    needsInquiry: false,
    lastInquiry: null,
    notSent: 0,
  };
}
