import { fullJitterDelay } from '../platform/resilience/backoff.js';
import type { Pool } from '../platform/database/db.js';
import { isDatabaseUnavailable } from '../platform/database/db-errors.js';
import type { Logger } from '../platform/telemetry/logger.js';
import { createOutageLog, type OutageLog } from '../platform/resilience/outage-log.js';
import type { DeadLetterOutbox } from './dead-letters/dead-letter-job.js';
import type { JobHandler, JobOutcome, JobPolicy } from './job-handler.js';
import { createJobAttempt } from './job-attempt.js';
import type { CallGate } from './job-gate.js';
import { createJobLoop } from './job-loop.js';
import { randomUUID } from 'node:crypto';
import type { IntakeClaim } from './claim-on-insert.js';
import { nextJobDueAt, retryJob } from './job-store.js';
import type { ClaimedJob } from './job-table.js';
import { countJobAttempt } from './job-metrics.js';
import { createLeaseLostLog, LeaseLostError } from './lease-lost.js';

export type {
  AttemptAnswer,
  CompletionOutcome,
  InquiryAnswer,
  JobHandler,
  JobOutcome,
  JobPolicy,
  JobResult,
} from './job-handler.js';

export interface JobWorkerDeps<J extends ClaimedJob, F> {
  pool: Pool;
  logger: Logger;
  handler: JobHandler<J, F>;
  policy: JobPolicy;
  /** Dead letters are stored with the dead mark and sent by the process's publisher. */
  deadLetters: DeadLetterOutbox;
  /** The process's one log of Postgres outages (one set of lines per outage); new if absent. */
  postgresOutage?: OutageLog;
  /** The outside system's circuit breaker (DESIGN 107), shared by the kinds that call it. */
  gate?: CallGate;
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
  const busy = new Map<string, number>();

  const attempt = createJobAttempt({
    pool,
    logger,
    handler,
    policy,
    deadLetters: deps.deadLetters,
    gate: deps.gate,
    backoffMs,
  });

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
  const claim = async (wanted: number) => {
    const limit = deps.gate ? deps.gate.admit(wanted) : wanted;
    if (limit === 0) return [];
    const jobs = await handler.claim(pool, limit, policy.leaseMs, policy.maxAttempts, busy);
    // A half-open breaker's one probe place, admitted to a kind with nothing due, goes back:
    // held, it would starve the other kind that shares the gate (refunds had none, charges
    // waited behind them for good in a chaos run).
    if (jobs.length === 0) deps.gate?.unused();
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
    ...(deps.gate ? { blockedForMs: deps.gate.blockedForMs } : {}),
  });
  deps.gate?.onClose(loop.wake);

  return {
    runOnce: async () => Promise.all((await claim(policy.concurrency)).map(workAndRelease)),
    wake: loop.wake,
    start: loop.start,
    stop: loop.stop,
    reserve: (max) => {
      // A job claimed on insert is never exhausted: that needs at least one attempt allowed.
      if (policy.maxAttempts < 1) return null;
      // While the breaker is not closed the loop's own claims decide (one probe, or none).
      if (deps.gate && !deps.gate.closed) return null;
      const slots = loop.reserve(max);
      return slots > 0 ? { slots, owner: randomUUID(), leaseMs: policy.leaseMs } : null;
    },
    adopt: (jobs, intake) => {
      countBusy(jobs);
      loop.adopt(jobs, intake.slots);
    },
  };
}
