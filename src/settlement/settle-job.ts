import type { Acquirer } from '../acquirer/acquirer.js';
import type { Pool } from '../platform/db.js';
import type { Logger } from '../platform/logger.js';
import { callAcquirer } from './call-acquirer.js';
import { completeSettlement } from './complete-settlement.js';
import { deadLetterJob, type PublishDeadLetter } from './dead-letter-job.js';
import { scheduleSettlementRetry } from './schedule-settlement-retry.js';
import type { ClaimedJob } from './settlement-repository.js';
import type { SettlementRunCounts } from './settlement-run-counts.js';

export interface SettleJobDeps {
  pool: Pool;
  acquirer: Acquirer;
  publishDeadLetter: PublishDeadLetter;
  logger: Logger;
  acquirerTimeoutMs: number;
  maxAttempts: number;
  paymentsTopic: string;
  /** The wait before the next attempt, after `attempts` failed ones. */
  retryDelayMs: (attempts: number) => number;
  /** Fault injection for tests: runs after the acquirer answered, before the database commit. */
  afterCharge?: (job: ClaimedJob) => Promise<void>;
}

/**
 * One claimed job: call the acquirer, then complete (settled or failed), schedule a retry, or,
 * once the attempts are exhausted, dead-letter.
 */
export async function settleJob(
  deps: SettleJobDeps,
  job: ClaimedJob,
  counts: SettlementRunCounts,
): Promise<void> {
  const answer = await callAcquirer(deps.acquirer, job, deps.acquirerTimeoutMs);
  await deps.afterCharge?.(job);
  if (answer.kind === 'final') {
    await completeSettlement(deps.pool, job, answer.final, deps.paymentsTopic, counts);
  } else if (job.attempts < deps.maxAttempts) {
    const delayMs = deps.retryDelayMs(job.attempts);
    await scheduleSettlementRetry(deps.pool, job, answer.failure, delayMs, counts);
  } else {
    await deadLetterJob(deps, job, answer.failure, counts);
  }
}
