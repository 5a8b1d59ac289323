import { acquirerMetrics } from '../acquirer/acquirer-metrics.js';
import {
  type Acquirer,
  type ChargeResult,
  chargeIdempotencyKey,
  classifyAcquirerFailure,
  inAcquirerSpan,
} from '../acquirer/acquirer.js';
import type { AttemptAnswer, InquiryAnswer } from '../jobs/job-worker.js';
import type { FinalStatus, SettlementJob } from './settlement-job-store.js';
import { settlementMetrics } from './settlement-metrics.js';

/** Charges the job's payment with its idempotency key; never rejects. */
export async function callAcquirer(
  acquirer: Acquirer,
  job: SettlementJob,
  timeoutMs: number,
): Promise<AttemptAnswer<FinalStatus>> {
  try {
    const attributes = { 'payment.id': job.paymentId, 'settlement.attempt': job.attempts };
    const answer = await inAcquirerSpan('acquirer charge', attributes, () =>
      acquirer.charge(
        {
          idempotencyKey: chargeIdempotencyKey(job.paymentId),
          paymentId: job.paymentId,
          amount: job.amount,
          currency: job.currency,
          source: job.source,
        },
        AbortSignal.timeout(timeoutMs),
      ),
    );
    settlementMetrics.attempts.inc({ result: answer.outcome });
    return { kind: 'final', final: finalOf(answer) };
  } catch (error) {
    const failure = classifyAcquirerFailure(error);
    settlementMetrics.attempts.inc({ result: failure.errorClass });
    return { kind: 'failure', failure };
  }
}

function finalOf(answer: ChargeResult): FinalStatus {
  return answer.outcome === 'approved'
    ? { status: 'settled' }
    : { status: 'failed', failureCode: answer.code };
}

/**
 * After a charge whose outcome is unknown: asks the acquirer's books about the payment's key
 * (DESIGN 106). Found: the charge's own answer settles or fails the payment; not found: it was
 * never charged, safe to send. Never rejects.
 */
export async function inquireCharge(
  inquire: NonNullable<Acquirer['inquireCharge']>,
  job: SettlementJob,
  timeoutMs: number,
): Promise<InquiryAnswer<FinalStatus>> {
  try {
    const attributes = { 'payment.id': job.paymentId, 'settlement.attempt': job.attempts };
    const found = await inAcquirerSpan('acquirer charge inquiry', attributes, async () => {
      const answer = await inquire(
        chargeIdempotencyKey(job.paymentId),
        AbortSignal.timeout(timeoutMs),
      );
      return answer ?? { outcome: 'not_found' as const };
    });
    acquirerMetrics.inquiries.inc({
      kind: 'charge',
      result: found.outcome === 'not_found' ? 'not_found' : 'found',
    });
    if (found.outcome === 'not_found') return { kind: 'not_found' };
    return { kind: 'found', final: finalOf(found) };
  } catch (error) {
    const failure = classifyAcquirerFailure(error);
    acquirerMetrics.inquiries.inc({ kind: 'charge', result: failure.errorClass });
    return { kind: 'failure', failure };
  }
}
