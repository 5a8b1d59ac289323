import { SpanKind } from '@opentelemetry/api';
import type { ChargeResult } from '../acquirer/acquirer.js';
import { inSpan } from '../platform/tracing.js';
import type { ClaimedJob } from './settlement-repository.js';

/**
 * The acquirer call as a CLIENT span under the settlement attempt: its duration, its answer
 * (approved/declined) and, when it throws (timeout, transient), the error. An HTTP acquirer
 * client would propagate the active context from here.
 */
export function inAcquirerSpan(
  job: ClaimedJob,
  charge: () => Promise<ChargeResult>,
): Promise<ChargeResult> {
  const options = {
    kind: SpanKind.CLIENT,
    attributes: { 'payment.id': job.paymentId, 'settlement.attempt': job.attempts },
  };
  return inSpan('acquirer charge', options, undefined, async (span) => {
    const result = await charge();
    span.setAttribute('acquirer.outcome', result.outcome);
    return result;
  });
}
