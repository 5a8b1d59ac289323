import { SpanKind, type Span } from '@opentelemetry/api';
import { contextOf } from '../outbox/trace-context.js';
import { inSpan } from '../platform/telemetry/tracing.js';
import type { ClaimedRefundJob } from './refund-job-store.js';

/**
 * One attempt of a refund job: a child of the refund POST's trace context (stored with the job),
 * so every attempt, retried ones included, shows in the refund's trace, as settlement attempts
 * do in the payment's. The result event written by the attempt carries this span's context.
 */
export function inRefundSpan<T>(job: ClaimedRefundJob, fn: (span: Span) => Promise<T>): Promise<T> {
  const options = {
    kind: SpanKind.INTERNAL,
    attributes: {
      'refund.id': job.refund.id,
      'payment.id': job.refund.payment_id,
      'refund.attempt': job.attempts,
    },
  };
  return inSpan('refund payment', options, contextOf(job.trace), fn);
}
