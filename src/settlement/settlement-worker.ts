import { deadLetterMetrics } from '../jobs/dead-letters/dead-letter-metrics.js';
import type { Acquirer } from '../acquirer/acquirer.js';
import type { DeadLetterReason } from '../jobs/dead-letters/dead-letter.js';
import type { DeadLetterOutbox } from '../jobs/dead-letters/dead-letter-job.js';
import type { CallGate } from '../jobs/job-gate.js';
import { SETTLEMENT_JOBS } from '../jobs/job-table.js';
import {
  createJobWorker,
  type JobHandler,
  type JobOutcome,
  type JobPolicy,
} from '../jobs/job-worker.js';
import { currentTraceContext } from '../outbox/trace-context.js';
import type { Config } from '../platform/config/config.js';
import type { Pool } from '../platform/database/db.js';
import type { ConsumedRecord } from '../platform/kafka/kafka.js';
import type { Logger } from '../platform/telemetry/logger.js';
import type { OutageLog } from '../platform/resilience/outage-log.js';
import type { HoldAcquirer } from '../acquirer/hold-acquirer.js';
import { callAcquirer, inquireCharge } from './call-acquirer.js';
import { callAuthorize, inquireAuthorization } from './call-hold-acquirer.js';
import { createCompletionBatcher } from './completion-batcher.js';
import { deadLetterPoison } from './poison-dead-letter.js';
import { settlementMetrics } from './settlement-metrics.js';
import {
  claimDueJobs,
  completePayments,
  type FinalStatus,
  type SettlementJob,
} from './settlement-job-store.js';
import { emptySettlementRunCounts, type SettlementRunCounts } from './settlement-run-counts.js';
import { inSettleSpan } from './settlement-spans.js';

export type { DeadLetterOutbox } from '../jobs/dead-letters/dead-letter-job.js';
export type { SettlementRunCounts } from './settlement-run-counts.js';

/** The settings of settlement jobs (refunds have their own: refund-worker.ts). */
export type SettlementJobSettings = Pick<
  Config,
  | 'SETTLEMENT_MAX_ATTEMPTS'
  | 'SETTLEMENT_BACKOFF_BASE_MS'
  | 'SETTLEMENT_BACKOFF_CAP_MS'
  | 'SETTLEMENT_RETRY_WINDOW_SECONDS'
  | 'SETTLEMENT_LEASE_MS'
  | 'SETTLEMENT_CONCURRENCY'
  | 'SETTLEMENT_POLL_MS'
  | 'ACQUIRER_TIMEOUT_MS'
  | 'KAFKA_TOPIC_PAYMENTS'
  | 'AUTHORIZATION_WINDOW_SECONDS'
> &
  Partial<Pick<Config, 'OUTAGE_LOG_INTERVAL_MS'>>;

/** The engine's policy from the settlement settings. */
function settlementJobPolicy(config: SettlementJobSettings): JobPolicy {
  return {
    maxAttempts: config.SETTLEMENT_MAX_ATTEMPTS,
    backoffBaseMs: config.SETTLEMENT_BACKOFF_BASE_MS,
    backoffCapMs: config.SETTLEMENT_BACKOFF_CAP_MS,
    retryWindowMs: config.SETTLEMENT_RETRY_WINDOW_SECONDS * 1_000,
    leaseMs: config.SETTLEMENT_LEASE_MS,
    concurrency: config.SETTLEMENT_CONCURRENCY,
    pollMs: config.SETTLEMENT_POLL_MS,
    outageLogIntervalMs: config.OUTAGE_LOG_INTERVAL_MS ?? 30_000,
    // The intake claims the jobs it records for free slots (claim-on-insert): a claim after
    // every finished job would mostly find nothing.
    claimAfterFinish: 'while-backlog',
  };
}

export interface WorkerDeps {
  pool: Pool;
  acquirer: Acquirer;
  /**
   * Authorizes manual payments (issue 40): the acquirer's two-step operations. Absent: a manual
   * payment's job fails (hold_acquirer_missing) until it is dead-lettered.
   */
  holdAcquirer?: HoldAcquirer;
  /** Dead letters are stored in the database and sent by its publisher (dead-letter-store). */
  deadLetters: DeadLetterOutbox;
  logger: Logger;
  config: SettlementJobSettings;
  /**
   * The process's one log of Postgres outages (shared with the refund worker, so an outage
   * costs one set of lines); a new one when absent.
   */
  postgresOutage?: OutageLog;
  /** The acquirer's circuit breaker (DESIGN 107), shared with the refund worker. */
  gate?: CallGate;
  /** Fault injection for tests: runs after the acquirer answered, before the database commit. */
  afterCharge?: (job: SettlementJob) => Promise<void>;
  random?: () => number;
}

/** Counts one job's outcome the way tests read a pass (SettlementRunCounts). */
function addToCounts(
  counts: SettlementRunCounts,
  { result, final }: JobOutcome<SettlementJob, FinalStatus>,
): void {
  // An authorization (requires_capture) counts as settled: the acquirer approved the payment.
  if (result === 'completed' && final?.status !== 'failed') counts.settled++;
  else if (result === 'completed') counts.failed++;
  else if (result === 'retried') counts.retried++;
  else if (result === 'dead') counts.deadLettered++;
}

/**
 * Settlement on the job engine (src/jobs/): a claimed job's payment is charged with its
 * idempotency key (call-acquirer), its answer recorded with others' in one transaction
 * (completion-batcher, completePayments), retried after backoff, or dead-lettered with its
 * `payment.created` record once its attempts are used up. `runOnce` is what tests drive;
 * `start` runs the engine's loop until `stop`.
 */
export function createSettlementWorker(deps: WorkerDeps) {
  const { config } = deps;
  const complete = createCompletionBatcher((completions) =>
    completePayments(
      deps.pool,
      completions,
      config.KAFKA_TOPIC_PAYMENTS,
      new Date(),
      config.AUTHORIZATION_WINDOW_SECONDS,
    ),
  );
  const timeoutMs = config.ACQUIRER_TIMEOUT_MS;
  const { holdAcquirer } = deps;
  const inquire = deps.acquirer.inquireCharge?.bind(deps.acquirer);
  // A manual payment is authorized (a hold), not charged: the same job, key and machinery.
  const inquireManual = holdAcquirer?.inquireAuthorization
    ? (job: SettlementJob) => inquireAuthorization(holdAcquirer, job, timeoutMs)
    : undefined;
  const handler: JobHandler<SettlementJob, FinalStatus> = {
    jobs: SETTLEMENT_JOBS,
    claim: claimDueJobs,
    attempt: (job) =>
      job.manual
        ? callAuthorize(holdAcquirer, job, timeoutMs)
        : callAcquirer(deps.acquirer, job, timeoutMs),
    ...(inquire || inquireManual
      ? {
          inquire: (job: SettlementJob) => {
            if (job.manual) {
              return inquireManual?.(job) ?? Promise.resolve({ kind: 'not_found' as const });
            }
            return inquire
              ? inquireCharge(inquire, job, timeoutMs)
              : Promise.resolve({ kind: 'not_found' as const });
          },
        }
      : {}),
    complete: (job, final) => complete({ ...job, final, trace: currentTraceContext() }),
    letter: (job) => ({ eventId: job.eventId, record: job.record }),
    inSpan: (job, work) => inSettleSpan(job, work),
    logFields: (job) => ({ payment_id: job.paymentId }),
    onOutcome: ({ job, result, final, failure }) => {
      if (result === 'completed' && final) {
        settlementMetrics.completed.inc({ status: final.status });
        settlementMetrics.settleLatency.observe(
          (Date.now() - job.paymentCreatedAt.getTime()) / 1000,
        );
      } else if (result === 'retried') {
        settlementMetrics.retried.inc();
      } else if (result === 'dead' && failure) {
        deadLetterMetrics.sent.inc({ error_class: failure.errorClass });
      }
    },
    ...(deps.afterCharge ? { afterAttempt: deps.afterCharge } : {}),
  };
  const engine = createJobWorker({ ...deps, handler, policy: settlementJobPolicy(config) });

  return {
    /** Claims one batch of due jobs and works them all: the step tests drive. */
    runOnce: async (): Promise<SettlementRunCounts> => {
      const outcomes = await engine.runOnce();
      const counts = { ...emptySettlementRunCounts(), claimed: outcomes.length };
      for (const outcome of outcomes) addToCounts(counts, outcome);
      return counts;
    },
    wake: engine.wake,
    start: engine.start,
    stop: engine.stop,
    /** The intake's claim on the jobs it records (claim-on-insert.ts), for free slots. */
    reserve: engine.reserve,
    /** Works the jobs the intake claimed, once its transaction committed. */
    adopt: engine.adopt,
    /** Keeps a record the consumer could not accept as a dead letter (sent by the publisher). */
    deadLetter: (record: ConsumedRecord, reason: DeadLetterReason) =>
      deadLetterPoison(deps, record, reason),
  };
}

export type SettlementWorker = ReturnType<typeof createSettlementWorker>;
