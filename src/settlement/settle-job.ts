import type { Acquirer } from '../acquirer/acquirer.js';
import type { Pool } from '../platform/db.js';
import type { Logger } from '../platform/logger.js';
import { callAcquirer } from './call-acquirer.js';
import { completeSettlement } from './complete-settlement.js';
import type { CompletePayment } from './completion-batcher.js';
import { deadLetterJob, type DeadLetterOutbox } from './dead-letter-job.js';
import { scheduleSettlementRetry } from './schedule-settlement-retry.js';
import type { ClaimedJob, Failure } from './settlement-repository.js';
import type { SettlementRunCounts } from './settlement-run-counts.js';

export interface SettleJobDeps {
  pool: Pool;
  acquirer: Acquirer;
  /** Where exhausted jobs' dead letters go (stored with the dead mark, sent by the publisher). */
  deadLetters: DeadLetterOutbox;
  logger: Logger;
  /** Records a final answer (grouped with others: completion-batcher). */
  complete: CompletePayment;
  acquirerTimeoutMs: number;
  maxAttempts: number;
  /** The wait before the next attempt, after `attempts` failed ones. */
  retryDelayMs: (attempts: number) => number;
  /** Fault injection for tests: runs after the acquirer answered, before the database commit. */
  afterCharge?: (job: ClaimedJob) => Promise<void>;
}

/** Why an exhausted job is dead-lettered when its last attempt recorded no failure. */
const OUTCOME_LOST: Failure = {
  errorClass: 'attempt_outcome_lost',
  message: 'the last attempt ended without a recorded outcome (crash or lease expiry)',
};

/**
 * One claimed job: call the acquirer, then complete (settled or failed), schedule a retry, or,
 * once the attempts are exhausted, dead-letter. A job claimed `exhausted` is dead-lettered
 * without calling the acquirer: the attempt limit holds whatever failed after the last call.
 */
export async function settleJob(
  deps: SettleJobDeps,
  job: ClaimedJob,
  counts: SettlementRunCounts,
): Promise<void> {
  if (job.exhausted) {
    await deadLetterJob(deps, job, job.lastFailure ?? OUTCOME_LOST, counts);
    return;
  }
  const answer = await callAcquirer(deps.acquirer, job, deps.acquirerTimeoutMs);
  await deps.afterCharge?.(job);
  if (answer.kind === 'final') {
    await completeSettlement(deps.complete, job, answer.final, counts);
  } else if (job.attempts < deps.maxAttempts) {
    const delayMs = deps.retryDelayMs(job.attempts);
    await scheduleSettlementRetry(deps.pool, job, answer.failure, delayMs, counts);
  } else {
    await deadLetterJob(deps, job, answer.failure, counts);
  }
}
