import { deadLetterMetrics } from '../jobs/dead-letters/dead-letter-metrics.js';
import type { RefundAcquirer } from '../acquirer/acquirer.js';
import type { DeadLetterOutbox } from '../jobs/dead-letters/dead-letter-job.js';
import type { CallGate } from '../jobs/job-gate.js';
import { REFUND_JOBS } from '../jobs/job-table.js';
import {
  createJobWorker,
  type JobHandler,
  type JobOutcome,
  type JobPolicy,
} from '../jobs/job-worker.js';
import { currentTraceContext } from '../outbox/trace-context.js';
import type { Config } from '../platform/config/config.js';
import type { Pool } from '../platform/database/db.js';
import type { Logger } from '../platform/telemetry/logger.js';
import type { OutageLog } from '../platform/resilience/outage-log.js';
import { callRefund, inquireRefund, refundLetter } from './refund-job.js';
import {
  claimDueRefundJobs,
  completeRefund,
  type ClaimedRefundJob,
  type RefundFinal,
} from './refund-job-store.js';
import { refundMetrics } from './refund-metrics.js';
import { inRefundSpan } from './refund-spans.js';

/** The settings of refund jobs: their own REFUND_*, defaults equal to the charges' (config). */
export type RefundJobSettings = Pick<
  Config,
  | 'REFUND_MAX_ATTEMPTS'
  | 'REFUND_BACKOFF_BASE_MS'
  | 'REFUND_BACKOFF_CAP_MS'
  | 'REFUND_RETRY_WINDOW_SECONDS'
  | 'REFUND_LEASE_MS'
  | 'REFUND_CONCURRENCY'
  | 'REFUND_POLL_MS'
  | 'ACQUIRER_TIMEOUT_MS'
  | 'KAFKA_TOPIC_PAYMENTS'
> &
  Partial<Pick<Config, 'OUTAGE_LOG_INTERVAL_MS'>>;

/** The engine's policy from the refund settings. */
function refundJobPolicy(config: RefundJobSettings): JobPolicy {
  return {
    maxAttempts: config.REFUND_MAX_ATTEMPTS,
    backoffBaseMs: config.REFUND_BACKOFF_BASE_MS,
    backoffCapMs: config.REFUND_BACKOFF_CAP_MS,
    retryWindowMs: config.REFUND_RETRY_WINDOW_SECONDS * 1_000,
    leaseMs: config.REFUND_LEASE_MS,
    concurrency: config.REFUND_CONCURRENCY,
    pollMs: config.REFUND_POLL_MS,
    outageLogIntervalMs: config.OUTAGE_LOG_INTERVAL_MS ?? 30_000,
  };
}

export interface RefundWorkerDeps {
  pool: Pool;
  acquirer: RefundAcquirer;
  /** Dead letters are stored with the dead mark and sent by the process's publisher. */
  deadLetters: DeadLetterOutbox;
  logger: Logger;
  config: RefundJobSettings;
  /** The process's one log of Postgres outages (see WorkerDeps); a new one when absent. */
  postgresOutage?: OutageLog;
  /** The acquirer's circuit breaker (DESIGN 107), shared with the charges' worker. */
  gate?: CallGate;
  /** Fault injection for tests: runs after the acquirer answered, before the database commit. */
  afterRefund?: (job: ClaimedRefundJob) => Promise<void>;
  random?: () => number;
}

/** How one refund job ended, as tests read a pass. */
export type RefundJobOutcome =
  'succeeded' | 'failed' | 'retried' | 'dead' | 'raced' | 'error' | 'lease_lost';

function toRefundOutcome({ result, final }: JobOutcome<ClaimedRefundJob, RefundFinal>) {
  if (result === 'completed') return final?.status ?? 'succeeded';
  if (result === 'unchanged') return 'raced';
  if (result === 'step_failed') return 'error';
  return result;
}

/**
 * Refunds on the job engine (src/jobs/), in the settlement role, with their own REFUND_* policy
 * (attempts, backoff, lease, slots; the acquirer timeout is the charges'): a claimed job's refund
 * is sent to the acquirer with its stable key, then completed (succeeded, or failed and its
 * amount released), retried, or, once its attempts are used up, dead-lettered with its
 * `refund.created` event; the refund stays pending with its amount reserved (the acquirer may
 * have refunded) until `dlq:replay`.
 */
export function createRefundWorker(deps: RefundWorkerDeps) {
  const { config } = deps;
  const inquire = deps.acquirer.inquireRefund?.bind(deps.acquirer);
  const handler: JobHandler<ClaimedRefundJob, RefundFinal> = {
    jobs: REFUND_JOBS,
    claim: claimDueRefundJobs,
    attempt: (job) => callRefund(deps.acquirer, job, config.ACQUIRER_TIMEOUT_MS),
    ...(inquire
      ? {
          inquire: (job: ClaimedRefundJob) =>
            inquireRefund(inquire, job, config.ACQUIRER_TIMEOUT_MS),
        }
      : {}),
    complete: (job, final) =>
      completeRefund(
        deps.pool,
        job,
        final,
        config.KAFKA_TOPIC_PAYMENTS,
        new Date(),
        currentTraceContext(),
      ),
    letter: (job) => refundLetter(job, config.KAFKA_TOPIC_PAYMENTS),
    inSpan: (job, work) =>
      inRefundSpan(job, async (span) => {
        const outcome = await work();
        span.setAttribute('refund.outcome', toRefundOutcome(outcome));
        return outcome;
      }),
    logFields: (job) => ({ refund_id: job.refund.id, payment_id: job.refund.payment_id }),
    onOutcome: ({ result, final, failure }) => {
      if (result === 'completed' && final) refundMetrics.completed.inc({ status: final.status });
      // The same dead-letter counter (and alert) as dead charges: same topic, same replay.
      if (result === 'dead' && failure) {
        deadLetterMetrics.sent.inc({ error_class: failure.errorClass });
      }
    },
    ...(deps.afterRefund ? { afterAttempt: deps.afterRefund } : {}),
  };
  const engine = createJobWorker({ ...deps, handler, policy: refundJobPolicy(config) });
  return {
    /** Claims one batch of due refund jobs and works them all: the step tests drive. */
    runOnce: async (): Promise<RefundJobOutcome[]> => (await engine.runOnce()).map(toRefundOutcome),
    wake: engine.wake,
    start: engine.start,
    stop: engine.stop,
  };
}

export type RefundWorker = ReturnType<typeof createRefundWorker>;
