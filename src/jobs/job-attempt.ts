import type { Pool } from '../platform/database/db.js';
import type { Logger } from '../platform/telemetry/logger.js';
import { deadLetterJob, type DeadLetterOutbox } from './dead-letters/dead-letter-job.js';
import type { CallGate } from './job-gate.js';
import { retryJob, type RetryMarks } from './job-store.js';
import type { ClaimedJob, Failure } from './job-table.js';
import type { JobHandler, JobOutcome, JobPolicy } from './job-handler.js';
import { LeaseLostError } from './lease-lost.js';

/** Why an exhausted job is dead-lettered when its last attempt recorded no failure. */
const OUTCOME_LOST: Failure = {
  errorClass: 'attempt_outcome_lost',
  message: 'the last attempt ended without a recorded outcome (crash or lease expiry)',
};

/** A claimed job that may not call while the gate is open: put back, not sent. */
const GATE_OPEN: Failure = {
  errorClass: 'acquirer_breaker_open',
  message: 'the circuit breaker is open: not sent',
  delivery: 'not_sent',
};

export interface AttemptDeps<J extends ClaimedJob, F> {
  pool: Pool;
  logger: Logger;
  handler: JobHandler<J, F>;
  policy: JobPolicy;
  deadLetters: DeadLetterOutbox;
  gate: CallGate | undefined;
  backoffMs: (attempts: number) => number;
}

/**
 * One claimed job's work (DESIGN 53, 59, 106): an inquiry first when the last call's outcome is
 * unknown (found: completed from the answer; not found: sent again, or dead-lettered once the
 * attempts or the retry window are used up), then the call, then its answer:
 *
 * - final: the kind's fenced completion;
 * - not sent (refused, breaker open, 503 before processing): put back, the attempt given back,
 *   after the Retry-After or the gate's wait; never dead-lettered for it;
 * - unknown (a timeout after sending, a lost connection): put back with an inquiry as the next
 *   step; never dead-lettered before the other side was asked;
 * - a retryable answer: retried with full-jitter backoff while attempts are left and the retry
 *   window (from the first counted failure) is open, else dead-lettered.
 */
export function createJobAttempt<J extends ClaimedJob, F>(deps: AttemptDeps<J, F>) {
  const { pool, logger, handler, policy, gate } = deps;
  const { kind } = handler.jobs;
  const windowElapsed = (job: J) =>
    policy.retryWindowMs !== undefined &&
    job.firstFailureAt !== null &&
    Date.now() - job.firstFailureAt.getTime() >= policy.retryWindowMs;
  const retryDelayMs = (job: J, failure: Failure) => {
    if (handler.retryDelayMs) return handler.retryDelayMs(job, failure);
    return Math.max(failure.notBeforeMs ?? 0, 0) + deps.backoffMs(job.attempts);
  };

  async function retry(job: J, failure: Failure, marks: RetryMarks): Promise<JobOutcome<J, F>> {
    await retryJob(pool, handler.jobs, job, failure, retryDelayMs(job, failure), 'retry', marks);
    return { job, result: 'retried', failure };
  }

  async function bury(job: J, failure: Failure, lastInquiry?: string): Promise<JobOutcome<J, F>> {
    if (handler.giveUp) {
      const outcome = await handler.giveUp(job, failure);
      if (outcome === 'lease_lost') throw new LeaseLostError(kind, 'dead', job.id);
      logger.warn(
        { ...handler.logFields(job), attempts: job.attempts, error_class: failure.errorClass },
        `${kind} attempts exhausted; given up`,
      );
      return { job, result: 'dead', failure };
    }
    const letter = handler.letter(job);
    await deadLetterJob(pool, deps.deadLetters, handler.jobs, job, failure, letter, lastInquiry);
    logger.warn(
      {
        ...handler.logFields(job),
        attempts: job.attempts,
        error_class: failure.errorClass,
        last_inquiry: lastInquiry ?? job.lastInquiry ?? 'none',
      },
      `${kind} attempts exhausted; dead-lettered`,
    );
    return { job, result: 'dead', failure };
  }

  /** The gate refuses the call: put back until it may pass, attempt given back. */
  function gateRefuses(job: J): Promise<JobOutcome<J, F>> | null {
    if (!gate || gate.tryCall()) return null;
    const failure = { ...GATE_OPEN, notBeforeMs: gate.blockedForMs() };
    return retry(job, failure, { giveBack: !job.exhausted, notSent: true, keepLastError: true });
  }

  async function complete(job: J, final: F): Promise<JobOutcome<J, F>> {
    const completion = await handler.complete(job, final);
    if (completion === 'lease_lost') throw new LeaseLostError(kind, 'complete', job.id);
    return { job, result: completion, final };
  }

  /** The inquiry step: an outcome, or null when the other side never did it (send now). */
  async function inquire(
    job: J,
    ask: NonNullable<JobHandler<J, F>['inquire']>,
  ): Promise<JobOutcome<J, F> | null> {
    const refused = gateRefuses(job);
    if (refused) return refused;
    const answer = await ask(job);
    if (answer.kind === 'failure')
      gate?.record(answer.failure.delivery ?? 'answered', answer.failure);
    else gate?.record('answered');
    if (answer.kind === 'found') return complete(job, answer.final);
    if (answer.kind === 'failure') {
      // An inquiry changes nothing on the other side: its failure is never an attempt.
      const marks = {
        giveBack: !job.exhausted,
        notSent: answer.failure.delivery === 'not_sent',
        keepLastError: true,
      };
      return retry(job, answer.failure, marks);
    }
    if (job.exhausted || windowElapsed(job)) {
      return bury(job, job.lastFailure ?? OUTCOME_LOST, 'not_found');
    }
    return null;
  }

  return async function attempt(job: J): Promise<JobOutcome<J, F>> {
    let lastInquiry: string | undefined;
    if (job.needsInquiry && handler.inquire) {
      const inquired = await inquire(job, handler.inquire);
      if (inquired) return inquired;
      lastInquiry = 'not_found';
    }
    if (job.exhausted) return bury(job, job.lastFailure ?? OUTCOME_LOST, lastInquiry);
    const refused = gateRefuses(job);
    if (refused) return refused;
    const answer = await handler.attempt(job);
    if (answer.kind === 'failure')
      gate?.record(answer.failure.delivery ?? 'answered', answer.failure);
    else gate?.record('answered');
    await handler.afterAttempt?.(job);
    if (answer.kind === 'final') return complete(job, answer.final);
    const { failure } = answer;
    const inquiry = lastInquiry === undefined ? {} : { lastInquiry };
    if (failure.delivery === 'not_sent') {
      return retry(job, failure, {
        giveBack: true,
        notSent: true,
        keepLastError: true,
        needsInquiry: false,
        ...inquiry,
      });
    }
    if (failure.delivery === 'unknown' && handler.inquire) {
      return retry(job, failure, { needsInquiry: true, ...inquiry });
    }
    if (job.attempts < policy.maxAttempts && !windowElapsed(job)) {
      return retry(job, failure, { needsInquiry: false, ...inquiry });
    }
    return bury(job, failure, lastInquiry);
  };
}
