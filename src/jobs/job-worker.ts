import { fullJitterDelay } from '../platform/backoff.js';
import type { Pool, Queryable } from '../platform/db.js';
import { isDatabaseUnavailable } from '../platform/db-errors.js';
import type { Logger } from '../platform/logger.js';
import { createOutageLog, type OutageLog } from '../platform/outage-log.js';
import { deadLetterJob, type DeadLetterOutbox, type JobLetter } from './dead-letter-job.js';
import { createJobLoop } from './job-loop.js';
import { nextJobDueAt, retryJob } from './job-store.js';
import type { ClaimedJob, Failure, JobTable } from './job-table.js';
import { countJobAttempt } from './job-metrics.js';
import { createLeaseLostLog, LeaseLostError } from './lease-lost.js';

/** An attempt's answer: the work's final result (`F`), or why there was none (to retry). */
export type AttemptAnswer<F> = { kind: 'final'; final: F } | { kind: 'failure'; failure: Failure };

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
  /** Why the job was retried or dead-lettered. */
  failure?: Failure;
}

/** What a kind of job does; the engine does the rest (claim, retry, dead letters, leases). */
export interface JobHandler<J extends ClaimedJob, F> {
  jobs: JobTable;
  /** Claims up to `limit` due jobs (job-store's claimJobs with the kind's join). */
  claim: (db: Queryable, limit: number, leaseMs: number, maxAttempts: number) => Promise<J[]>;
  /** The outside call (acquirer); never rejects: a failure is an answer. */
  attempt: (job: J) => Promise<AttemptAnswer<F>>;
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
}

export interface JobWorkerDeps<J extends ClaimedJob, F> {
  pool: Pool;
  logger: Logger;
  handler: JobHandler<J, F>;
  policy: JobPolicy;
  /** Dead letters are stored with the dead mark and sent by the process's publisher. */
  deadLetters: DeadLetterOutbox;
  /** The process's one log of Postgres outages (one set of lines per outage); new if absent. */
  postgresOutage?: OutageLog;
  random?: () => number;
}

export interface JobWorker<J, F> {
  /** Claims one batch of due jobs and works them all: the step tests drive. */
  runOnce: () => Promise<JobOutcome<J, F>[]>;
  /** New work arrived: claim at once instead of at the next poll. */
  wake: () => void;
  start: () => void;
  /** Stops claiming and lets in-flight jobs finish (bounded by the attempt's timeout). */
  stop: () => Promise<void>;
}

/** Why an exhausted job is dead-lettered when its last attempt recorded no failure. */
const OUTCOME_LOST: Failure = {
  errorClass: 'attempt_outcome_lost',
  message: 'the last attempt ended without a recorded outcome (crash or lease expiry)',
};

/**
 * The durable job engine's worker for one kind: a loop that keeps up to `concurrency` jobs in
 * flight (job-loop), each claimed with a lease and an owner token (job-store), attempted, then
 * completed, retried after full-jitter backoff, or, once its attempts are used up, marked dead
 * with its dead letter stored in the same transaction (dead-letter-job). Every write after the
 * claim is fenced by the token: a write refused because another claim holds the job now is
 * counted and logged (jobs_lease_lost_total), never applied, and the job left to its owner. A
 * step that fails after the attempt (the completion's transaction, say) is recorded as the job's
 * last failure and retried after the backoff; the claim counted the attempt, so a step that keeps
 * failing ends in the dead-letter queue at the limit. If even that record fails (database down),
 * the lease runs out and the job is claimed again.
 */
export function createJobWorker<J extends ClaimedJob, F>(
  deps: JobWorkerDeps<J, F>,
): JobWorker<J, F> {
  const { pool, logger, handler, policy } = deps;
  const { kind } = handler.jobs;
  const random = deps.random ?? Math.random;
  const postgresOutage =
    deps.postgresOutage ?? createOutageLog('postgres', logger, policy.outageLogIntervalMs);
  const leaseLost = createLeaseLostLog(kind, logger, policy.outageLogIntervalMs);
  const retryDelayMs = (attempts: number) =>
    fullJitterDelay(attempts, policy.backoffBaseMs, policy.backoffCapMs, random);

  async function bury(job: J, failure: Failure): Promise<JobOutcome<J, F>> {
    await deadLetterJob(pool, deps.deadLetters, handler.jobs, job, failure, handler.letter(job));
    logger.warn(
      { ...handler.logFields(job), attempts: job.attempts, error_class: failure.errorClass },
      `${kind} attempts exhausted; dead-lettered`,
    );
    return { job, result: 'dead', failure };
  }

  async function attempt(job: J): Promise<JobOutcome<J, F>> {
    if (job.exhausted) return bury(job, job.lastFailure ?? OUTCOME_LOST);
    const answer = await handler.attempt(job);
    await handler.afterAttempt?.(job);
    if (answer.kind === 'final') {
      const completion = await handler.complete(job, answer.final);
      if (completion === 'lease_lost') throw new LeaseLostError(kind, 'complete', job.id);
      return { job, result: completion, final: answer.final };
    }
    if (job.attempts < policy.maxAttempts) {
      await retryJob(pool, handler.jobs, job, answer.failure, retryDelayMs(job.attempts));
      return { job, result: 'retried', failure: answer.failure };
    }
    return bury(job, answer.failure);
  }

  /** After a failed step: the failure recorded and the job retried later, if we still own it. */
  async function recordStepFailure(job: J, error: unknown): Promise<JobOutcome<J, F>> {
    if (isDatabaseUnavailable(error)) {
      postgresOutage.failed(error, { action: `${kind} step failed; the job is retried` });
    } else {
      logger.error({ err: error, ...handler.logFields(job) }, `${kind} step failed`);
    }
    const failure = {
      errorClass: `${kind}_step_failed`,
      message: error instanceof Error ? error.message : String(error),
    };
    try {
      await retryJob(pool, handler.jobs, job, failure, retryDelayMs(job.attempts), 'failure');
    } catch (lost) {
      if (lost instanceof LeaseLostError) {
        leaseLost(lost);
        return { job, result: 'lease_lost' };
      }
    }
    return { job, result: 'step_failed', failure };
  }

  /** One job, never rejecting. */
  async function work(job: J): Promise<JobOutcome<J, F>> {
    let outcome: JobOutcome<J, F>;
    try {
      outcome = await handler.inSpan(job, () => attempt(job));
    } catch (error) {
      if (error instanceof LeaseLostError) {
        leaseLost(error);
        outcome = { job, result: 'lease_lost' };
      } else {
        outcome = await recordStepFailure(job, error);
      }
    }
    countJobAttempt(kind, outcome.result === 'unchanged' ? 'completed' : outcome.result);
    handler.onOutcome?.(outcome);
    return outcome;
  }

  const claim = (limit: number) => handler.claim(pool, limit, policy.leaseMs, policy.maxAttempts);

  const loop = createJobLoop({
    kind,
    concurrency: policy.concurrency,
    pollMs: policy.pollMs,
    outage: postgresOutage,
    claim,
    work: async (job) => {
      await work(job);
    },
    nextDueAt: () => nextJobDueAt(pool, handler.jobs),
  });

  return {
    runOnce: async () => Promise.all((await claim(policy.concurrency)).map(work)),
    wake: loop.wake,
    start: loop.start,
    stop: loop.stop,
  };
}
