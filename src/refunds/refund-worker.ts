import type { RefundAcquirer } from '../acquirer/acquirer.js';
import { fullJitterDelay } from '../platform/backoff.js';
import type { Config } from '../platform/config.js';
import type { Pool } from '../platform/db.js';
import { isDatabaseUnavailable } from '../platform/db-errors.js';
import { createLeaseLostLog, LeaseLostError } from '../jobs/lease-lost.js';
import type { Logger } from '../platform/logger.js';
import { createOutageLog, type OutageLog } from '../platform/outage-log.js';
import type { PublishDeadLetter } from '../settlement/dead-letter-job.js';
import {
  claimDueRefundJobs,
  scheduleRefundRetry,
  type ClaimedRefundJob,
} from './refund-job-repository.js';
import { runRefundJob, type RefundJobDeps, type RefundJobOutcome } from './refund-job.js';

export interface RefundWorkerDeps {
  pool: Pool;
  acquirer: RefundAcquirer;
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
  > &
    Partial<Pick<Config, 'OUTAGE_LOG_INTERVAL_MS'>>;
  /** The process's one log of Postgres outages (see WorkerDeps); a new one when absent. */
  postgresOutage?: OutageLog;
  afterRefund?: RefundJobDeps['afterRefund'];
  random?: () => number;
}

/**
 * Works the durable refund jobs (written with each refund by the API) in the settlement role,
 * with the charges' retry policy: same attempt limit, backoff, lease, timeout and dead-letter
 * topic. `runOnce` claims one batch and works it (what tests drive); `start` polls until `stop`.
 */
export function createRefundWorker(deps: RefundWorkerDeps) {
  const { config, logger } = deps;
  const random = deps.random ?? Math.random;
  const postgresOutage =
    deps.postgresOutage ??
    createOutageLog('postgres', logger, config.OUTAGE_LOG_INTERVAL_MS ?? 30_000);
  const leaseLost = createLeaseLostLog('refund', logger, config.OUTAGE_LOG_INTERVAL_MS ?? 30_000);
  const steps: RefundJobDeps = {
    pool: deps.pool,
    acquirer: deps.acquirer,
    publishDeadLetter: deps.publishDeadLetter,
    logger,
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
    ...(deps.afterRefund ? { afterRefund: deps.afterRefund } : {}),
  };

  /**
   * One job, never rejecting. A failed step (the completion's transaction, say) is recorded as
   * the job's last error and the job retried after the usual backoff, its lease released; the
   * claim counted the attempt, so a step that keeps failing ends in the dead-letter queue after
   * the attempt limit (DESIGN 45). If even the record fails (database down), the lease runs out
   * and the job is claimed again. A write refused because another claim holds the job now is
   * counted and logged, and the job left to its owner.
   */
  function work(job: ClaimedRefundJob): Promise<RefundJobOutcome | 'error' | 'lease_lost'> {
    return runRefundJob(steps, job).catch(async (error: unknown) => {
      if (error instanceof LeaseLostError) {
        leaseLost(error);
        return 'lease_lost' as const;
      }
      if (isDatabaseUnavailable(error)) {
        postgresOutage.failed(error, { action: 'refund step failed; the job is retried' });
      } else {
        logger.error({ err: error, refund_id: job.refund.id }, 'refund step failed');
      }
      const failure = {
        errorClass: 'refund_step_failed',
        message: error instanceof Error ? error.message : String(error),
      };
      const delayMs = steps.retryDelayMs(job.attempts);
      return scheduleRefundRetry(deps.pool, job, failure, delayMs, 'failure').then(
        () => 'error' as const,
        (lost: unknown) => {
          if (lost instanceof LeaseLostError) {
            leaseLost(lost);
            return 'lease_lost' as const;
          }
          return 'error' as const;
        },
      );
    });
  }

  async function runOnce(): Promise<(RefundJobOutcome | 'error' | 'lease_lost')[]> {
    const jobs = await claimDueRefundJobs(
      deps.pool,
      config.SETTLEMENT_CONCURRENCY,
      config.SETTLEMENT_LEASE_MS,
      config.SETTLEMENT_MAX_ATTEMPTS,
    );
    return Promise.all(jobs.map(work));
  }

  let stopped = true;
  let loop: Promise<void> = Promise.resolve();
  let wakeUp: (() => void) | undefined;
  /** Read through a call: `stop` changes it while `run` awaits. */
  const isStopped = () => stopped;

  async function run(): Promise<void> {
    while (!stopped) {
      let claimed = 0;
      try {
        claimed = (await runOnce()).length;
        postgresOutage.succeeded();
      } catch (error) {
        postgresOutage.failed(error, { action: 'refund claim failed; retrying' });
      }
      // A full batch: more may be due at once. Otherwise poll (a stop ends the sleep; one
      // that came while working skips it).
      if (claimed < config.SETTLEMENT_CONCURRENCY && !isStopped()) {
        await new Promise<void>((resolve) => {
          wakeUp = resolve;
          setTimeout(resolve, config.SETTLEMENT_POLL_MS).unref();
        });
        wakeUp = undefined;
      }
    }
  }

  return {
    runOnce,
    start: () => {
      if (!stopped) return;
      stopped = false;
      loop = run();
    },
    stop: async () => {
      stopped = true;
      wakeUp?.();
      await loop;
    },
  };
}

export type RefundWorker = ReturnType<typeof createRefundWorker>;
