import {
  AcquirerTransientError,
  chargeIdempotencyKey,
  type Acquirer,
} from '../acquirer/acquirer.js';
import type { ClaimedJob, Failure, FinalStatus } from './settlement-repository.js';
import { settlementMetrics } from './settlement-metrics.js';

/** The acquirer's final word on a payment, or why there was none (to retry). */
export type AcquirerAnswer =
  { kind: 'final'; final: FinalStatus } | { kind: 'failure'; failure: Failure };

/** Charges the job's payment with its idempotency key; never rejects. */
export async function callAcquirer(
  acquirer: Acquirer,
  job: ClaimedJob,
  timeoutMs: number,
): Promise<AcquirerAnswer> {
  try {
    const answer = await acquirer.charge(
      {
        idempotencyKey: chargeIdempotencyKey(job.paymentId),
        paymentId: job.paymentId,
        amount: job.amount,
        currency: job.currency,
        source: job.source,
      },
      AbortSignal.timeout(timeoutMs),
    );
    settlementMetrics.attempts.inc({ result: answer.outcome });
    const final: FinalStatus =
      answer.outcome === 'approved'
        ? { status: 'settled' }
        : { status: 'failed', failureCode: answer.code };
    return { kind: 'final', final };
  } catch (error) {
    const failure = classify(error);
    settlementMetrics.attempts.inc({ result: failure.errorClass });
    return { kind: 'failure', failure };
  }
}

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
