import {
  AcquirerTransientError,
  chargeIdempotencyKey,
  type Acquirer,
} from '../acquirer/acquirer.js';
import type { Config } from '../platform/config.js';
import type { Pool } from '../platform/db.js';
import type { Logger } from '../platform/logger.js';
import { fullJitterDelay } from '../platform/backoff.js';
import { toDeadLetter, type DeadLetterReason } from './dead-letter.js';
import type { SourceRecord } from './settlement-repository.js';
import {
  claimDueJobs,
  completePayment,
  markDead,
  nextDueAt,
  scheduleRetry,
  type ClaimedJob,
  type Failure,
  type FinalStatus,
} from './settlement-repository.js';
import { settlementMetrics } from './settlement-metrics.js';

/** Sends a dead letter; resolves once the broker acknowledged it. */
export type PublishDeadLetter = (record: ReturnType<typeof toDeadLetter>) => Promise<void>;

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

export interface RunOnceResult {
  claimed: number;
  settled: number;
  failed: number;
  retried: number;
  deadLettered: number;
}

/**
 * Works the durable settlement jobs: claim due jobs, call the acquirer with the payment's
 * idempotency key, then settle, fail, retry later (backoff with full jitter) or dead-letter.
 * Retries wait in the database, not in the consumer, so one payment's backoff never holds back
 * another's. `runOnce` is what tests drive; `start` loops until `stop`.
 */
export function createSettlementWorker(deps: WorkerDeps) {
  const { config, logger } = deps;
  const random = deps.random ?? Math.random;

  async function handle(job: ClaimedJob, result: RunOnceResult): Promise<void> {
    let final: FinalStatus | null = null;
    let failure: Failure | null = null;
    try {
      const answer = await deps.acquirer.charge(
        {
          idempotencyKey: chargeIdempotencyKey(job.paymentId),
          paymentId: job.paymentId,
          amount: job.amount,
          currency: job.currency,
          source: job.source,
        },
        AbortSignal.timeout(config.ACQUIRER_TIMEOUT_MS),
      );
      final =
        answer.outcome === 'approved'
          ? { status: 'settled' }
          : { status: 'failed', failureCode: answer.code };
      settlementMetrics.attempts.inc({ result: answer.outcome });
    } catch (error) {
      failure = classify(error);
      settlementMetrics.attempts.inc({ result: failure.errorClass });
    }
    await deps.afterCharge?.(job);

    if (final) {
      const changed = await completePayment(
        deps.pool,
        job.paymentId,
        final,
        config.KAFKA_TOPIC_PAYMENTS,
        new Date(),
      );
      if (changed) {
        settlementMetrics.completed.inc({ status: final.status });
        settlementMetrics.settleLatency.observe(
          (Date.now() - job.paymentCreatedAt.getTime()) / 1000,
        );
        if (final.status === 'settled') result.settled++;
        else result.failed++;
      }
      return;
    }
    if (!failure) return;
    if (job.attempts < config.SETTLEMENT_MAX_ATTEMPTS) {
      const delay = fullJitterDelay(
        job.attempts,
        config.SETTLEMENT_BACKOFF_BASE_MS,
        config.SETTLEMENT_BACKOFF_CAP_MS,
        random,
      );
      await scheduleRetry(deps.pool, job.paymentId, failure, delay);
      settlementMetrics.retried.inc();
      result.retried++;
      return;
    }
    // Exhausted: publish first, then mark dead. A crash in between re-claims the job after
    // its lease and publishes again (same event id): at least once, never lost.
    const times = { firstFailureAt: job.firstFailureAt ?? new Date(), lastFailureAt: new Date() };
    await deadLetter(job.record, {
      eventId: job.eventId,
      errorClass: failure.errorClass,
      errorMessage: failure.message,
      attempts: job.attempts,
      ...times,
    });
    await markDead(deps.pool, job.paymentId, failure);
    result.deadLettered++;
    logger.warn(
      { payment_id: job.paymentId, attempts: job.attempts, error_class: failure.errorClass },
      'settlement retries exhausted; event dead-lettered',
    );
  }

  async function deadLetter(record: SourceRecord, reason: DeadLetterReason): Promise<void> {
    await deps.publishDeadLetter(toDeadLetter(record, reason));
    settlementMetrics.deadLettered.inc({ error_class: reason.errorClass });
  }

  async function runOnce(): Promise<RunOnceResult> {
    const result = emptyResult();
    const jobs = await claimDueJobs(
      deps.pool,
      config.SETTLEMENT_CONCURRENCY,
      config.SETTLEMENT_LEASE_MS,
    );
    result.claimed = jobs.length;
    await Promise.all(jobs.map((job) => work(job, result)));
    return result;
  }

  /** One job, never rejecting: a failed step keeps its lease and is retried when it ends. */
  function work(job: ClaimedJob, result: RunOnceResult): Promise<void> {
    return handle(job, result).catch((error: unknown) => {
      logger.error({ err: error, payment_id: job.paymentId }, 'settlement step failed');
    });
  }

  /**
   * The loop keeps up to SETTLEMENT_CONCURRENCY jobs in flight and claims more as soon as one
   * finishes: one slow acquirer call (a 2 s timeout) occupies one slot, not the whole batch.
   */
  async function fillSlots(inFlight: Set<Promise<void>>, result: RunOnceResult): Promise<number> {
    const free = config.SETTLEMENT_CONCURRENCY - inFlight.size;
    if (free <= 0) return 0;
    const jobs = await claimDueJobs(deps.pool, free, config.SETTLEMENT_LEASE_MS);
    for (const job of jobs) {
      const running = work(job, result).finally(() => {
        inFlight.delete(running);
        wake();
      });
      inFlight.add(running);
    }
    return jobs.length;
  }

  const state = { stopped: true };
  /** A wake-up that is not lost when it arrives while the loop is busy rather than asleep. */
  let signalled = false;
  let resolveSleep: (() => void) | undefined;
  const wake = () => {
    signalled = true;
    resolveSleep?.();
  };
  async function sleep(ms: number): Promise<void> {
    if (!signalled) {
      await new Promise<void>((resolve) => {
        resolveSleep = resolve;
        setTimeout(resolve, ms).unref();
      });
      resolveSleep = undefined;
    }
    signalled = false;
  }

  /** Nothing claimable now: sleep until the earliest due job, new work, or the poll interval. */
  async function sleepUntilDue(): Promise<void> {
    const due = await nextDueAt(deps.pool).catch(() => null);
    const untilDue = due ? due.getTime() - Date.now() : config.SETTLEMENT_POLL_MS;
    await sleep(Math.max(5, Math.min(config.SETTLEMENT_POLL_MS, untilDue)));
  }

  let loop: Promise<void> = Promise.resolve();

  return {
    runOnce,
    /** New work arrived: look at once instead of at the next poll. */
    wake,
    start(): void {
      if (!state.stopped) return;
      state.stopped = false;
      loop = (async () => {
        const inFlight = new Set<Promise<void>>();
        // Counts from the loop are only for tests' runOnce; the loop reports through metrics.
        const result = emptyResult();
        while (!state.stopped) {
          try {
            const claimed = await fillSlots(inFlight, result);
            // Every slot busy: wait for one to free (or new work). Nothing due: sleep until
            // the next job is. Otherwise claim again at once.
            if (inFlight.size >= config.SETTLEMENT_CONCURRENCY)
              await sleep(config.SETTLEMENT_POLL_MS);
            else if (claimed === 0) await sleepUntilDue();
          } catch (error) {
            logger.warn({ err: error }, 'settlement worker iteration failed; retrying');
            await new Promise((r) => setTimeout(r, config.SETTLEMENT_POLL_MS));
          }
        }
        await Promise.all(inFlight);
      })();
    },
    /** Stops claiming, lets in-flight jobs finish (bounded by the acquirer timeout). */
    async stop(): Promise<void> {
      state.stopped = true;
      wake();
      await loop;
    },
    deadLetter,
  };
}

function emptyResult(): RunOnceResult {
  return { claimed: 0, settled: 0, failed: 0, retried: 0, deadLettered: 0 };
}

export type SettlementWorker = ReturnType<typeof createSettlementWorker>;

function classify(error: unknown): Failure {
  if (error instanceof AcquirerTransientError) {
    return { errorClass: error.errorClass, message: error.message };
  }
  if (error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError')) {
    return { errorClass: 'acquirer_timeout', message: 'no answer within the call timeout' };
  }
  // Anything unexpected from the acquirer is retried: a charge is idempotent, so trying again
  // is safe, and giving up early would strand the payment.
  return {
    errorClass: 'acquirer_error',
    message: error instanceof Error ? error.message : String(error),
  };
}
