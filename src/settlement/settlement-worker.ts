import type { Acquirer } from '../acquirer/acquirer.js';
import type { Config } from '../platform/config.js';
import type { Pool } from '../platform/db.js';
import type { Logger } from '../platform/logger.js';
import { fullJitterDelay } from '../platform/backoff.js';
import { isDatabaseUnavailable } from '../platform/db-errors.js';
import { createLeaseLostLog, LeaseLostError } from '../jobs/lease-lost.js';
import { createOutageLog, type OutageLog } from '../platform/outage-log.js';
import type { ConsumedRecord } from '../platform/kafka.js';
import type { DeadLetterReason } from '../jobs/dead-letter.js';
import { deadLetterPoison, type DeadLetterOutbox } from './dead-letter-job.js';
import { settleJob, type SettleJobDeps } from './settle-job.js';
import { createCompletionBatcher } from './completion-batcher.js';
import { createJobLoop } from '../jobs/job-loop.js';
import { inSettleSpan } from './settlement-spans.js';
import {
  claimDueJobs,
  completePayments,
  nextDueAt,
  type ClaimedJob,
} from './settlement-repository.js';
import { recordFailure } from './settlement-job-failures.js';
import { emptySettlementRunCounts, type SettlementRunCounts } from './settlement-run-counts.js';

export type { DeadLetterOutbox, PublishDeadLetter } from './dead-letter-job.js';
export type { SettlementRunCounts } from './settlement-run-counts.js';

export interface WorkerDeps {
  pool: Pool;
  acquirer: Acquirer;
  /** Dead letters are stored in the database and sent by its publisher (dead-letter-store). */
  deadLetters: DeadLetterOutbox;
  logger: Logger;
  config: Pick<
    Config,
    | 'SETTLEMENT_MAX_ATTEMPTS'
    | 'SETTLEMENT_BACKOFF_BASE_MS'
    | 'SETTLEMENT_BACKOFF_CAP_MS'
    | 'SETTLEMENT_LEASE_MS'
    | 'SETTLEMENT_CONCURRENCY'
    | 'SETTLEMENT_POLL_MS'
    | 'ACQUIRER_TIMEOUT_MS'
    | 'KAFKA_TOPIC_PAYMENTS'
  > &
    Partial<Pick<Config, 'OUTAGE_LOG_INTERVAL_MS'>>;
  /**
   * The process's one log of Postgres outages (shared with the refund worker, so an outage
   * costs one set of lines); a new one when absent.
   */
  postgresOutage?: OutageLog;
  /** Fault injection for tests: runs after the acquirer answered, before the database commit. */
  afterCharge?: (job: ClaimedJob) => Promise<void>;
  random?: () => number;
}

/** The steps' dependencies; the retry delay is full-jitter backoff (configured base, cap). */
function settleJobDeps(deps: WorkerDeps): SettleJobDeps {
  const { config } = deps;
  const random = deps.random ?? Math.random;
  return {
    pool: deps.pool,
    acquirer: deps.acquirer,
    deadLetters: deps.deadLetters,
    logger: deps.logger,
    complete: createCompletionBatcher((completions) =>
      completePayments(deps.pool, completions, config.KAFKA_TOPIC_PAYMENTS, new Date()),
    ),
    acquirerTimeoutMs: config.ACQUIRER_TIMEOUT_MS,
    maxAttempts: config.SETTLEMENT_MAX_ATTEMPTS,
    retryDelayMs: (attempts) =>
      fullJitterDelay(
        attempts,
        config.SETTLEMENT_BACKOFF_BASE_MS,
        config.SETTLEMENT_BACKOFF_CAP_MS,
        random,
      ),
    ...(deps.afterCharge ? { afterCharge: deps.afterCharge } : {}),
  };
}

/**
 * Works the durable settlement jobs in named steps: claim due jobs (settlement-repository),
 * call the acquirer with the payment's idempotency key (call-acquirer), then complete
 * (complete-settlement), retry later with full-jitter backoff (schedule-settlement-retry) or
 * dead-letter (dead-letter-job). Retries wait in the database, not in the consumer, so one
 * payment's backoff never holds back another's. `runOnce` is what tests drive; `start` runs the
 * slot-filling loop (settlement-loop) until `stop`.
 */
export function createSettlementWorker(deps: WorkerDeps) {
  const { config, logger } = deps;
  const steps = settleJobDeps(deps);
  // Postgres going away fails the claim every poll and every job in flight: one outage's lines.
  const postgresOutage =
    deps.postgresOutage ??
    createOutageLog('postgres', logger, config.OUTAGE_LOG_INTERVAL_MS ?? 30_000);
  const leaseLost = createLeaseLostLog(
    'settlement',
    logger,
    config.OUTAGE_LOG_INTERVAL_MS ?? 30_000,
  );

  /**
   * One job, never rejecting. A failed step (the completion's transaction, say) keeps its lease,
   * as a crash there would, and the job is claimed again when the lease ends; its failure is
   * recorded (best effort) so that the dead letter says why once the attempts are used up
   * (ClaimedJob.exhausted). A write refused because another claim holds the job now (the lease
   * ran out) is counted and logged, and the job left to its owner.
   */
  function work(job: ClaimedJob, counts: SettlementRunCounts): Promise<void> {
    return inSettleSpan(job, () => settleJob(steps, job, counts)).catch(async (error: unknown) => {
      if (error instanceof LeaseLostError) {
        leaseLost(error);
        return;
      }
      if (isDatabaseUnavailable(error)) {
        postgresOutage.failed(error, { action: 'settlement step failed; the job is retried' });
      } else {
        logger.error({ err: error, payment_id: job.paymentId }, 'settlement step failed');
      }
      const failure = {
        errorClass: 'settlement_step_failed',
        message: error instanceof Error ? error.message : String(error),
      };
      // If even this fails (database down), the dead letter names the previous failure.
      await recordFailure(deps.pool, job, failure).catch((lost: unknown) => {
        if (lost instanceof LeaseLostError) leaseLost(lost);
      });
    });
  }

  /** Claims one batch of due jobs and works them all: the step tests drive. */
  async function runOnce(): Promise<SettlementRunCounts> {
    const counts = emptySettlementRunCounts();
    const jobs = await claimDueJobs(
      deps.pool,
      config.SETTLEMENT_CONCURRENCY,
      config.SETTLEMENT_LEASE_MS,
      config.SETTLEMENT_MAX_ATTEMPTS,
    );
    counts.claimed = jobs.length;
    await Promise.all(jobs.map((job) => work(job, counts)));
    return counts;
  }

  // Counts from the loop are only for tests' runOnce; the loop reports through metrics.
  const loopCounts = emptySettlementRunCounts();
  const loop = createJobLoop({
    kind: 'settlement',
    concurrency: config.SETTLEMENT_CONCURRENCY,
    pollMs: config.SETTLEMENT_POLL_MS,
    outage: postgresOutage,
    claim: (limit) =>
      claimDueJobs(deps.pool, limit, config.SETTLEMENT_LEASE_MS, config.SETTLEMENT_MAX_ATTEMPTS),
    work: (job) => work(job, loopCounts),
    nextDueAt: () => nextDueAt(deps.pool),
  });

  return {
    runOnce,
    wake: loop.wake,
    start: loop.start,
    stop: loop.stop,
    /** Keeps a record the consumer could not accept as a dead letter (sent by the publisher). */
    deadLetter: (record: ConsumedRecord, reason: DeadLetterReason) =>
      deadLetterPoison(deps, record, reason),
  };
}

export type SettlementWorker = ReturnType<typeof createSettlementWorker>;
