import { ROOT_CONTEXT, SpanKind, SpanStatusCode, type Span } from '@opentelemetry/api';
import { contextOf, traceContextOfEnvelope } from '../outbox/trace-context.js';
import type { ConsumedRecord } from '../platform/kafka/kafka.js';
import { inSpan, tracer } from '../platform/telemetry/tracing.js';
import type { SettlementJob } from './settlement-job-store.js';

/**
 * The consumer's intake of one record: a CONSUMER span, child of the record's `ce_traceparent`
 * (the context the event was created in), as the messaging conventions do for a record
 * processed on its own. Records are recorded in batches (one transaction per batch), so each
 * record's span covers its batch's transaction; the caller ends it. A record without a trace
 * context gets a root span.
 */
export function startConsumeSpan(record: ConsumedRecord): Span {
  const parent = record.headers.ce_traceparent
    ? contextOf({
        traceparent: record.headers.ce_traceparent,
        tracestate: record.headers.ce_tracestate ?? null,
      })
    : ROOT_CONTEXT;
  const options = {
    kind: SpanKind.CONSUMER,
    attributes: {
      'messaging.system': 'kafka',
      'messaging.operation.type': 'process',
      'messaging.destination.name': record.topic,
      'messaging.destination.partition.id': String(record.partition),
      'messaging.kafka.offset': Number(record.offset),
      ...(record.headers.ce_id ? { 'messaging.message.id': record.headers.ce_id } : {}),
    },
  };
  return tracer.startSpan(`process ${record.topic}`, options, parent);
}

/** Marks a span as failed by `error` (the caller still ends it). */
export function failSpan(span: Span, error: unknown): void {
  span.recordException(error instanceof Error ? error : String(error));
  span.setStatus({ code: SpanStatusCode.ERROR });
}

/**
 * One settlement attempt: a child of the trace context of the job's `payment.created` record
 * (kept in the job), so every attempt, retried ones included, shows in the payment's trace.
 * The result event written by the attempt carries this span's context.
 */
export function inSettleSpan<T>(job: SettlementJob, fn: (span: Span) => Promise<T>): Promise<T> {
  const parent = contextOf(traceContextOfEnvelope(job.record.value));
  const options = {
    attributes: {
      'payment.id': job.paymentId,
      'messaging.message.id': job.eventId,
      'settlement.attempt': job.attempts,
    },
  };
  return inSpan('settle payment', options, parent, fn);
}
