import type { Queryable } from '../platform/database/db.js';
import type { JobLetter } from './dead-letters/dead-letter-job.js';
import type { ClaimFilter } from './job-store.js';
import type { ClaimedJob, Failure, JobTable } from './job-table.js';

/** What a job kind gives the engine (job-worker.ts): its calls, its writes, its policy. */

/** An attempt's answer: the work's final result (`F`), or why there was none (to retry). */
export type AttemptAnswer<F> = { kind: 'final'; final: F } | { kind: 'failure'; failure: Failure };

/**
 * An inquiry's answer (DESIGN 106): the other side did the work (`found`, with its final
 * result), never did it (`not_found`: safe to send), or the inquiry itself failed.
 */
export type InquiryAnswer<F> =
  { kind: 'found'; final: F } | { kind: 'not_found' } | { kind: 'failure'; failure: Failure };

/**
 * What recording a final answer did: changed the resource (`completed`), found it already
 * finished (`unchanged`, its job removed all the same), or wrote nothing because the claim no
 * longer held the job's lease (`lease_lost`).
 */
export type CompletionOutcome = 'completed' | 'unchanged' | 'lease_lost';

/** How one claimed job ended in this worker. */
export type JobResult =
  'completed' | 'unchanged' | 'retried' | 'dead' | 'lease_lost' | 'step_failed';

export interface JobOutcome<J, F> {
  job: J;
  result: JobResult;
  /** The final answer recorded (`completed`, `unchanged`). */
  final?: F;
  /** Why the job was retried, dead-lettered or given up (`dead` under a handler's giveUp). */
  failure?: Failure;
}

/** What a kind of job does; the engine does the rest (claim, retry, dead letters, leases). */
export interface JobHandler<J extends ClaimedJob, F> {
  jobs: JobTable;
  /**
   * Claims up to `limit` due jobs (job-store's claimJobs with the kind's join); a kind with a
   * `group` cap gets the jobs in flight per group (`busy`) to pass on in its ClaimFilter.
   */
  claim: (
    db: Queryable,
    limit: number,
    leaseMs: number,
    maxAttempts: number,
    busy: ReadonlyMap<string, number>,
  ) => Promise<J[]>;
  /**
   * A kind whose claim has a ClaimFilter: the filter, so the idle loop sleeps until a job the
   * claim would take is due (not one held back by its order or a full group).
   */
  claimFilter?: (busy: ReadonlyMap<string, number>) => ClaimFilter;
  /** At most `cap` jobs of one group (`of`) in flight in this worker (webhooks: per endpoint). */
  group?: { of: (job: J) => string; cap: number };
  /** The delay before the next attempt after `failure` (default: the policy's full jitter). */
  retryDelayMs?: (job: J, failure: Failure) => number;
  /**
   * Attempts exhausted: ends the job the kind's way, fenced by its lease, instead of the dead
   * letter (webhooks: the delivery failed, the job removed).
   */
  giveUp?: (job: J, failure: Failure) => Promise<CompletionOutcome>;
  /** The outside call (acquirer); never rejects: a failure is an answer. */
  attempt: (job: J) => Promise<AttemptAnswer<F>>;
  /**
   * Asks the other side whether it did the job's work (by its idempotency key), after a call
   * whose outcome is unknown; never rejects. Without it an unknown outcome is retried as any
   * failure (the idempotency key the only guard).
   */
  inquire?: (job: J) => Promise<InquiryAnswer<F>>;
  /** Records a final answer, fenced by the job's lease (ownedJobsCte). */
  complete: (job: J, final: F) => Promise<CompletionOutcome>;
  /** The dead letter of an exhausted job. */
  letter: (job: J) => JobLetter;
  /** Runs one job's work inside the kind's span. */
  inSpan: (job: J, work: () => Promise<JobOutcome<J, F>>) => Promise<JobOutcome<J, F>>;
  /** After each job (metrics); never throws. */
  onOutcome?: (outcome: JobOutcome<J, F>) => void;
  /** Fault injection for tests: runs after the attempt answered, before its write. */
  afterAttempt?: (job: J) => Promise<void>;
  /** The job's fields in a log line (`{ payment_id }`). */
  logFields: (job: J) => Record<string, unknown>;
}

/** One kind's retry policy and pace. */
export interface JobPolicy {
  maxAttempts: number;
  backoffBaseMs: number;
  backoffCapMs: number;
  leaseMs: number;
  /** Jobs in flight at once. */
  concurrency: number;
  pollMs: number;
  outageLogIntervalMs: number;
  /** Whether a finished job makes the loop claim again (job-loop's claimAfterFinish). */
  claimAfterFinish?: 'always' | 'while-backlog';
  /**
   * How long after its first counted failure a job may still be retried (DESIGN 106); absent:
   * only maxAttempts bounds it.
   */
  retryWindowMs?: number;
}
