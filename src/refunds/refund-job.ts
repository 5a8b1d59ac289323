import { classifyAcquirerFailure } from '../acquirer/acquirer-failure.js';
import { inAcquirerSpan } from '../acquirer/acquirer-span.js';
import { refundIdempotencyKey, type RefundAcquirer } from '../acquirer/acquirer.js';
import { toKafkaRecord } from '../outbox/cloud-event.js';
import { refundEventId } from '../outbox/refund-event-id.js';
import { currentTraceContext } from '../outbox/trace-context.js';
import type { Pool } from '../platform/db.js';
import { LeaseLostError } from '../jobs/lease-lost.js';
import type { Logger } from '../platform/logger.js';
import { sendDeadLetter, type PublishDeadLetter } from '../settlement/dead-letter-job.js';
import {
  completeRefund,
  markRefundDead,
  scheduleRefundRetry,
  type ClaimedRefundJob,
  type RefundFailure,
  type RefundFinal,
} from './refund-job-repository.js';
import { refundMetrics } from './refund-metrics.js';
import { toRefundResource } from './refund-resource.js';
import { inRefundSpan } from './refund-spans.js';

export interface RefundJobDeps {
  pool: Pool;
  acquirer: RefundAcquirer;
  publishDeadLetter: PublishDeadLetter;
  logger: Logger;
  acquirerTimeoutMs: number;
  maxAttempts: number;
  paymentsTopic: string;
  retryDelayMs: (attempts: number) => number;
  /** Fault injection for tests: runs after the acquirer answered, before the database commit. */
  afterRefund?: (job: ClaimedRefundJob) => Promise<void>;
}

export type RefundJobOutcome = 'succeeded' | 'failed' | 'retried' | 'dead' | 'raced';

/** Why an exhausted job is dead-lettered when its last attempt recorded no failure. */
const OUTCOME_LOST: RefundFailure = {
  errorClass: 'attempt_outcome_lost',
  message: 'the last attempt ended without a recorded outcome (crash or lease expiry)',
};

/**
 * One claimed refund job: call the acquirer's refund with the refund's stable key, then
 * complete (succeeded, or failed and its amount released), retry later, or, once the attempts
 * are exhausted (the charges' limit), dead-letter to the same topic as charges. A job claimed
 * `exhausted` is dead-lettered without calling the acquirer (DESIGN 45). A write that another
 * claim's lease refuses throws LeaseLostError.
 */
export function runRefundJob(
  deps: RefundJobDeps,
  job: ClaimedRefundJob,
): Promise<RefundJobOutcome> {
  return inRefundSpan(job, async (span) => {
    const outcome = await attemptRefund(deps, job);
    span.setAttribute('refund.outcome', outcome);
    return outcome;
  });
}

async function attemptRefund(
  deps: RefundJobDeps,
  job: ClaimedRefundJob,
): Promise<RefundJobOutcome> {
  if (job.exhausted) {
    return deadLetterRefund(deps, job, job.lastFailure ?? OUTCOME_LOST);
  }
  const answer = await callRefund(deps, job);
  await deps.afterRefund?.(job);
  if ('status' in answer) {
    const outcome = await completeRefund(
      deps.pool,
      job,
      answer,
      deps.paymentsTopic,
      new Date(),
      currentTraceContext(),
    );
    if (outcome === 'lease_lost') throw new LeaseLostError('refund', 'complete', job.refund.id);
    if (outcome === 'unchanged') return 'raced';
    refundMetrics.completed.inc({ status: answer.status });
    return answer.status;
  }
  if (job.attempts < deps.maxAttempts) {
    await scheduleRefundRetry(deps.pool, job, answer, deps.retryDelayMs(job.attempts));
    return 'retried';
  }
  return deadLetterRefund(deps, job, answer);
}

async function callRefund(
  deps: RefundJobDeps,
  job: ClaimedRefundJob,
): Promise<RefundFinal | RefundFailure> {
  const { refund } = job;
  try {
    const attributes = { 'refund.id': refund.id, 'refund.attempt': job.attempts };
    const answer = await inAcquirerSpan('acquirer refund', attributes, () =>
      deps.acquirer.refund(
        {
          idempotencyKey: refundIdempotencyKey(refund.id),
          refundId: refund.id,
          paymentId: refund.payment_id,
          amount: Number(refund.amount),
          currency: refund.currency,
          source: job.source,
        },
        AbortSignal.timeout(deps.acquirerTimeoutMs),
      ),
    );
    refundMetrics.attempts.inc({ result: answer.outcome });
    return answer.outcome === 'approved'
      ? { status: 'succeeded' }
      : { status: 'failed', failureCode: answer.code };
  } catch (error) {
    const failure = classifyAcquirerFailure(error);
    refundMetrics.attempts.inc({ result: failure.errorClass });
    return failure;
  }
}

/**
 * Publish first, then mark dead (a crash in between publishes again: at least once). The dead
 * letter carries the refund's `refund.created` CloudEvent, keyed by the payment id. A publish
 * that fails (broker down) keeps the acquirer's failure and tries again after the usual backoff,
 * as a charge's does (DESIGN 45): the job is then claimed `exhausted`, so the acquirer is not
 * called again.
 */
async function deadLetterRefund(
  deps: RefundJobDeps,
  job: ClaimedRefundJob,
  failure: RefundFailure,
): Promise<'dead' | 'retried'> {
  const { refund } = job;
  const eventId = refundEventId(refund.id, 'refund.created');
  const created = toKafkaRecord({
    eventId,
    eventType: 'refund.created',
    aggregateId: refund.payment_id,
    data: toRefundResource({ ...refund, status: 'pending', failure_code: null }),
    createdAt: refund.created_at,
    // The refund's trace: a replay from the dead-letter topic continues it.
    ...job.trace,
  });
  try {
    // The same topic, replay and counter as dead charges (the dead-letter alert).
    await sendDeadLetter(
      deps.publishDeadLetter,
      {
        topic: deps.paymentsTopic,
        partition: -1,
        offset: '-1',
        key: created.key,
        value: created.value,
      },
      {
        eventId,
        errorClass: failure.errorClass,
        errorMessage: failure.message,
        attempts: job.attempts,
        firstFailureAt: job.firstFailureAt ?? new Date(),
        lastFailureAt: new Date(),
      },
    );
  } catch (error) {
    deps.logger.warn(
      { err: error, refund_id: refund.id },
      'refund dead-letter publish failed; retrying later without calling the acquirer',
    );
    await scheduleRefundRetry(deps.pool, job, failure, deps.retryDelayMs(job.attempts));
    return 'retried';
  }
  await markRefundDead(deps.pool, job, failure);
  deps.logger.warn(
    { refund_id: refund.id, payment_id: refund.payment_id, attempts: job.attempts },
    'refund retries exhausted; dead-lettered',
  );
  return 'dead';
}
