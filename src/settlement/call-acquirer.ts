import {
  type Acquirer,
  chargeIdempotencyKey,
  classifyAcquirerFailure,
  inAcquirerSpan,
} from '../acquirer/acquirer.js';
import type { AttemptAnswer } from '../jobs/job-worker.js';
import type { FinalStatus, SettlementJob } from './settlement-repository.js';
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
    const final: FinalStatus =
      answer.outcome === 'approved'
        ? { status: 'settled' }
        : { status: 'failed', failureCode: answer.code };
    return { kind: 'final', final };
  } catch (error) {
    const failure = classifyAcquirerFailure(error);
    settlementMetrics.attempts.inc({ result: failure.errorClass });
    return { kind: 'failure', failure };
  }
}
