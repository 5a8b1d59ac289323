import { fullJitterDelay } from '../platform/backoff.js';
import type { Pool, Queryable } from '../platform/db.js';
import { isDatabaseUnavailable } from '../platform/db-errors.js';
import type { Logger } from '../platform/logger.js';
import { createOutageLog, type OutageLog } from '../platform/outage-log.js';
import { deadLetterJob, type DeadLetterOutbox, type JobLetter } from './dead-letter-job.js';
import { createJobLoop } from './job-loop.js';
import { randomUUID } from 'node:crypto';
import type { IntakeClaim } from './claim-on-insert.js';
import { nextJobDueAt, retryJob, type ClaimFilter } from './job-store.js';
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
  /**
   * An intake that claims what it records (claim-on-insert.ts): its claim for up to `max` jobs,
   * the slots held for them, or null (the loop is not running, or no slot is free).
   */
  reserve: (max: number) => IntakeClaim | null;
  /** Works the jobs the intake claimed under `claim` (after its commit), frees its other slots. */
  adopt: (jobs: readonly J[], claim: IntakeClaim) => void;
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
 * the lease runs out and the job is claimed again. A kind may add rules of its own (webhooks):
 * a claim filter and a per-group in-flight cap, its own retry delay, and a give-up in place of the
 * dead letter; without them the engine behaves as above.
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
  const backoffMs = (attempts: number) =>
    fullJitterDelay(attempts, policy.backoffBaseMs, policy.backoffCapMs, random);
  const retryDelayMs = (job: J, failure: Failure) =>
    handler.retryDelayMs ? handler.retryDelayMs(job, failure) : backoffMs(job.attempts);
  const busy = new Map<string, number>();

  async function bury(job: J, failure: Failure): Promise<JobOutcome<J, F>> {
    if (handler.giveUp) {
      const outcome = await handler.giveUp(job, failure);
      if (outcome === 'lease_lost') throw new LeaseLostError(kind, 'dead', job.id);
      logger.warn(
        { ...handler.logFields(job), attempts: job.attempts, error_class: failure.errorClass },
        `${kind} attempts exhausted; given up`,
      );
      return { job, result: 'dead', failure };
    }
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
      await retryJob(pool, handler.jobs, job, answer.failure, retryDelayMs(job, answer.failure));
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
      await retryJob(pool, handler.jobs, job, failure, backoffMs(job.attempts), 'failure');
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

  /** Counts each claimed job in its group until its work ends (release). */
  const countBusy = (jobs: readonly J[]) => {
    const group = handler.group;
    if (group) for (const job of jobs) busy.set(group.of(job), (busy.get(group.of(job)) ?? 0) + 1);
  };
  const claim = async (limit: number) => {
    const jobs = await handler.claim(pool, limit, policy.leaseMs, policy.maxAttempts, busy);
    countBusy(jobs);
    return jobs;
  };
  const release = (job: J) => {
    if (!handler.group) return;
    const key = handler.group.of(job);
    const left = (busy.get(key) ?? 1) - 1;
    if (left > 0) busy.set(key, left);
    else busy.delete(key);
  };
  const workAndRelease = (job: J) =>
    work(job).finally(() => {
      release(job);
    });

  const loop = createJobLoop({
    kind,
    concurrency: policy.concurrency,
    pollMs: policy.pollMs,
    outage: postgresOutage,
    ...(policy.claimAfterFinish ? { claimAfterFinish: policy.claimAfterFinish } : {}),
    claim,
    work: async (job) => {
      await workAndRelease(job);
    },
    nextDueAt: () => nextJobDueAt(pool, handler.jobs, handler.claimFilter?.(busy)),
  });

  return {
    runOnce: async () => Promise.all((await claim(policy.concurrency)).map(workAndRelease)),
    wake: loop.wake,
    start: loop.start,
    stop: loop.stop,
    reserve: (max) => {
      // A job claimed on insert is never exhausted: that needs at least one attempt allowed.
      if (policy.maxAttempts < 1) return null;
      const slots = loop.reserve(max);
      return slots > 0 ? { slots, owner: randomUUID(), leaseMs: policy.leaseMs } : null;
    },
    adopt: (jobs, intake) => {
      countBusy(jobs);
      loop.adopt(jobs, intake.slots);
    },
  };
}
