import { acquirerMetrics } from '../acquirer/acquirer-metrics.js';
import {
  classifyAcquirerFailure,
  inAcquirerSpan,
  type RefundAcquirer,
  type RefundResult,
  refundIdempotencyKey,
} from '../acquirer/acquirer.js';
import type { JobLetter } from '../jobs/dead-letters/dead-letter-job.js';
import type { AttemptAnswer, InquiryAnswer } from '../jobs/job-worker.js';
import { toKafkaRecord } from '../outbox/cloud-event.js';
import { refundEventId } from './refund-event-id.js';
import type { ClaimedRefundJob, RefundFinal } from './refund-job-store.js';
import { refundMetrics } from './refund-metrics.js';
import { toRefundResource } from './refund-resource.js';

/**
 * One attempt of a refund job: the acquirer's refund with the refund's stable key, within
 * `timeoutMs`; never rejects (a failure is an answer the engine retries or dead-letters).
 */
export async function callRefund(
  acquirer: RefundAcquirer,
  job: ClaimedRefundJob,
  timeoutMs: number,
): Promise<AttemptAnswer<RefundFinal>> {
  const { refund } = job;
  try {
    const attributes = { 'refund.id': refund.id, 'refund.attempt': job.attempts };
    const answer = await inAcquirerSpan('acquirer refund', attributes, () =>
      acquirer.refund(
        {
          idempotencyKey: refundIdempotencyKey(refund.id),
          refundId: refund.id,
          paymentId: refund.payment_id,
          amount: Number(refund.amount),
          currency: refund.currency,
          source: job.source,
        },
        AbortSignal.timeout(timeoutMs),
      ),
    );
    refundMetrics.attempts.inc({ result: answer.outcome });
    return { kind: 'final', final: finalOf(answer) };
  } catch (error) {
    const failure = classifyAcquirerFailure(error);
    refundMetrics.attempts.inc({ result: failure.errorClass });
    return { kind: 'failure', failure };
  }
}

function finalOf(answer: RefundResult): RefundFinal {
  return answer.outcome === 'approved'
    ? { status: 'succeeded' }
    : { status: 'failed', failureCode: answer.code };
}

/**
 * After a refund call whose outcome is unknown: asks the acquirer's books about the refund's key
 * (DESIGN 106). Found: its own answer completes the refund; not found: never refunded, safe to
 * send. Never rejects.
 */
export async function inquireRefund(
  inquire: NonNullable<RefundAcquirer['inquireRefund']>,
  job: ClaimedRefundJob,
  timeoutMs: number,
): Promise<InquiryAnswer<RefundFinal>> {
  const { refund } = job;
  try {
    const attributes = { 'refund.id': refund.id, 'refund.attempt': job.attempts };
    const found = await inAcquirerSpan('acquirer refund inquiry', attributes, async () => {
      const answer = await inquire(refundIdempotencyKey(refund.id), AbortSignal.timeout(timeoutMs));
      return answer ?? { outcome: 'not_found' as const };
    });
    const result = found.outcome === 'not_found' ? 'not_found' : 'found';
    acquirerMetrics.inquiries.inc({ kind: 'refund', result });
    if (found.outcome === 'not_found') return { kind: 'not_found' };
    return { kind: 'found', final: finalOf(found) };
  } catch (error) {
    const failure = classifyAcquirerFailure(error);
    acquirerMetrics.inquiries.inc({ kind: 'refund', result: failure.errorClass });
    return { kind: 'failure', failure };
  }
}

/**
 * An exhausted refund's dead letter: its `refund.created` CloudEvent (the event `dlq:replay`
 * puts back on the payments topic to revive the job), keyed by the payment id and carrying the
 * refund's trace, on the same topic as dead charges.
 */
export function refundLetter(job: ClaimedRefundJob, paymentsTopic: string): JobLetter {
  const { refund } = job;
  const eventId = refundEventId(refund.id, 'refund.created');
  const created = toKafkaRecord({
    eventId,
    eventType: 'refund.created',
    aggregateId: refund.payment_id,
    data: toRefundResource({ ...refund, status: 'pending', failure_code: null }),
    createdAt: refund.created_at,
    ...job.trace,
  });
  return {
    eventId,
    record: {
      topic: paymentsTopic,
      partition: -1,
      offset: '-1',
      key: created.key,
      value: created.value,
    },
  };
}
