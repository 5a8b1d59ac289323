import { SpanKind } from '@opentelemetry/api';
import type { HoldAcquirer } from '../acquirer/hold-acquirer.js';
import { deadLetterMetrics } from '../jobs/dead-letters/dead-letter-metrics.js';
import type { DeadLetterOutbox } from '../jobs/dead-letters/dead-letter-job.js';
import type { CallGate } from '../jobs/job-gate.js';
import { HOLD_JOBS } from '../jobs/job-table.js';
import {
  createJobWorker,
  type JobHandler,
  type JobOutcome,
  type JobPolicy,
} from '../jobs/job-worker.js';
import { currentTraceContext } from '../outbox/trace-context.js';
import type { Pool } from '../platform/database/db.js';
import type { OutageLog } from '../platform/resilience/outage-log.js';
import type { Logger } from '../platform/telemetry/logger.js';
import { inSpan } from '../platform/telemetry/tracing.js';
import { attemptHold, holdLetter, inquireHoldJob } from './hold-job.js';
import { claimDueHoldJobs, completeHold, type HoldFinal, type HoldJob } from './hold-job-store.js';
import type { SettlementJobSettings } from './settlement-worker.js';

export interface HoldWorkerDeps {
  pool: Pool;
  /** The acquirer's two-step operations; absent: every hold job fails until dead-lettered. */
  holdAcquirer: HoldAcquirer | undefined;
  deadLetters: DeadLetterOutbox;
  logger: Logger;
  /** The charges' settings: a capture or void is the payment's acquirer work, as its charge. */
  config: SettlementJobSettings;
  postgresOutage?: OutageLog;
  /** The acquirer's circuit breaker, shared with charges and refunds. */
  gate?: CallGate;
  /** Fault injection for tests: runs after the acquirer answered, before the database commit. */
  afterCall?: (job: HoldJob) => Promise<void>;
  random?: () => number;
}

function holdJobPolicy(config: SettlementJobSettings): JobPolicy {
  return {
    maxAttempts: config.SETTLEMENT_MAX_ATTEMPTS,
    backoffBaseMs: config.SETTLEMENT_BACKOFF_BASE_MS,
    backoffCapMs: config.SETTLEMENT_BACKOFF_CAP_MS,
    retryWindowMs: config.SETTLEMENT_RETRY_WINDOW_SECONDS * 1_000,
    leaseMs: config.SETTLEMENT_LEASE_MS,
    concurrency: config.SETTLEMENT_CONCURRENCY,
    pollMs: config.SETTLEMENT_POLL_MS,
    outageLogIntervalMs: config.OUTAGE_LOG_INTERVAL_MS ?? 30_000,
  };
}

/** How one hold job ended, as tests read a pass. */
export type HoldJobOutcome =
  HoldFinal['status'] | 'retried' | 'dead' | 'raced' | 'error' | 'lease_lost';

function toHoldOutcome({ result, final }: JobOutcome<HoldJob, HoldFinal>): HoldJobOutcome {
  if (result === 'completed') return final?.status ?? 'settled';
  if (result === 'unchanged') return 'raced';
  if (result === 'step_failed') return 'error';
  return result;
}

/**
 * Captures, voids and expiries of manual payments on the job engine (issue 40, DESIGN 132), in
 * the settlement role: one job per authorized payment, due at its capture_before or as soon as a
 * capture or cancel was decided; each attempt calls the acquirer with the decision's key
 * (hold-job.ts), then the payment is settled, canceled or failed with its event (completeHold),
 * retried after backoff (an unknown outcome asked about first), or dead-lettered at the limit.
 */
export function createHoldWorker(deps: HoldWorkerDeps) {
  const { config } = deps;
  const calls = {
    db: deps.pool,
    holds: deps.holdAcquirer,
    timeoutMs: config.ACQUIRER_TIMEOUT_MS,
  };
  const handler: JobHandler<HoldJob, HoldFinal> = {
    jobs: HOLD_JOBS,
    claim: claimDueHoldJobs,
    attempt: (job) => attemptHold(calls, job),
    inquire: (job) => inquireHoldJob(calls, job),
    complete: (job, final) =>
      completeHold(
        deps.pool,
        job,
        final,
        config.KAFKA_TOPIC_PAYMENTS,
        new Date(),
        currentTraceContext(),
      ),
    letter: (job) => holdLetter(job, config.KAFKA_TOPIC_PAYMENTS),
    inSpan: (job, work) =>
      inSpan(
        'hold payment',
        {
          kind: SpanKind.INTERNAL,
          attributes: { 'payment.id': job.id, 'hold.attempt': job.attempts },
        },
        undefined,
        async (span) => {
          const outcome = await work();
          span.setAttribute('hold.outcome', toHoldOutcome(outcome));
          return outcome;
        },
      ),
    logFields: (job) => ({ payment_id: job.id }),
    onOutcome: ({ result, failure }) => {
      if (result === 'dead' && failure) {
        deadLetterMetrics.sent.inc({ error_class: failure.errorClass });
      }
    },
    ...(deps.afterCall ? { afterAttempt: deps.afterCall } : {}),
  };
  const engine = createJobWorker({ ...deps, handler, policy: holdJobPolicy(config) });
  return {
    /** Claims one batch of due hold jobs and works them all: the step tests drive. */
    runOnce: async (): Promise<HoldJobOutcome[]> => (await engine.runOnce()).map(toHoldOutcome),
    wake: engine.wake,
    start: engine.start,
    stop: engine.stop,
  };
}

export type HoldWorker = ReturnType<typeof createHoldWorker>;
