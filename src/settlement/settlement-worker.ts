import type { Acquirer } from '../acquirer/acquirer.js';
import type { Config } from '../platform/config.js';
import type { Pool } from '../platform/db.js';
import type { Logger } from '../platform/logger.js';
import { fullJitterDelay } from '../platform/backoff.js';
import type { DeadLetterReason } from './dead-letter.js';
import { sendDeadLetter, type PublishDeadLetter } from './dead-letter-job.js';
import { settleJob, type SettleJobDeps } from './settle-job.js';
import { createSettlementLoop } from './settlement-loop.js';
import {
  claimDueJobs,
  nextDueAt,
  type ClaimedJob,
  type SourceRecord,
} from './settlement-repository.js';
import { emptySettlementRunCounts, type SettlementRunCounts } from './settlement-run-counts.js';

export type { PublishDeadLetter } from './dead-letter-job.js';
export type { SettlementRunCounts } from './settlement-run-counts.js';

export interface WorkerDeps {
  pool: Pool;
  acquirer: Acquirer;
  publishDeadLetter: PublishDeadLetter;
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
  >;
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
    publishDeadLetter: deps.publishDeadLetter,
    logger: deps.logger,
    acquirerTimeoutMs: config.ACQUIRER_TIMEOUT_MS,
    maxAttempts: config.SETTLEMENT_MAX_ATTEMPTS,
    paymentsTopic: config.KAFKA_TOPIC_PAYMENTS,
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

  /** One job, never rejecting: a failed step keeps its lease and is retried when it ends. */
  function work(job: ClaimedJob, counts: SettlementRunCounts): Promise<void> {
    return settleJob(steps, job, counts).catch((error: unknown) => {
      logger.error({ err: error, payment_id: job.paymentId }, 'settlement step failed');
    });
  }

  /** Claims one batch of due jobs and works them all: the step tests drive. */
  async function runOnce(): Promise<SettlementRunCounts> {
    const counts = emptySettlementRunCounts();
    const jobs = await claimDueJobs(
      deps.pool,
      config.SETTLEMENT_CONCURRENCY,
      config.SETTLEMENT_LEASE_MS,
    );
    counts.claimed = jobs.length;
    await Promise.all(jobs.map((job) => work(job, counts)));
    return counts;
  }

  // Counts from the loop are only for tests' runOnce; the loop reports through metrics.
  const loopCounts = emptySettlementRunCounts();
  const loop = createSettlementLoop({
    concurrency: config.SETTLEMENT_CONCURRENCY,
    pollMs: config.SETTLEMENT_POLL_MS,
    logger,
    claim: (limit) => claimDueJobs(deps.pool, limit, config.SETTLEMENT_LEASE_MS),
    work: (job) => work(job, loopCounts),
    nextDueAt: () => nextDueAt(deps.pool),
  });

  return {
    runOnce,
    wake: loop.wake,
    start: loop.start,
    stop: loop.stop,
    /** Publishes a record the consumer could not accept to the dead-letter topic. */
    deadLetter: (record: SourceRecord, reason: DeadLetterReason) =>
      sendDeadLetter(deps.publishDeadLetter, record, reason),
  };
}

export type SettlementWorker = ReturnType<typeof createSettlementWorker>;
