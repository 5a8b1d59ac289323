import { SpanKind, SpanStatusCode, type Span } from '@opentelemetry/api';
import { tracer } from '../platform/tracing.js';
import type { ClaimedEvent } from './outbox-repository.js';
import type { PublishOutcome } from './publish-claimed.js';
import { contextOf } from './trace-context.js';

/**
 * One PRODUCER span per claimed row that carries a trace context, a child of that context (the
 * POST, or the settlement attempt for a result event), so the relay's publish shows in the
 * payment's trace. Rows without one (tracing off when written) get no span: a batch of
 * untraced rows must not start a root trace each.
 */
export function startPublishSpans(events: readonly ClaimedEvent[]): Map<string, Span> {
  const spans = new Map<string, Span>();
  for (const event of events) {
    if (!event.traceparent) continue;
    const parent = contextOf({
      traceparent: event.traceparent,
      tracestate: event.tracestate ?? null,
    });
    const span = tracer.startSpan(
      `send ${event.topic}`,
      {
        kind: SpanKind.PRODUCER,
        attributes: {
          'messaging.system': 'kafka',
          'messaging.operation.type': 'send',
          'messaging.destination.name': event.topic,
          'messaging.message.id': event.eventId,
          'messaging.kafka.message.key': event.aggregateId,
          'cloudevents.event_type': event.eventType,
          'outbox.attempts': event.attempts,
        },
      },
      parent,
    );
    spans.set(event.id, span);
  }
  return spans;
}

/** Ends the spans with what Kafka did with each row. */
export function endPublishSpans(spans: Map<string, Span>, outcome: PublishOutcome): void {
  if (spans.size === 0) return;
  for (const event of outcome.acked) spans.get(event.id)?.end();
  for (const { event, error } of outcome.rejected) {
    fail(spans.get(event.id), 'rejected by the broker', error);
  }
  for (const event of outcome.unsent) {
    fail(spans.get(event.id), 'Kafka unavailable', outcome.unavailable);
  }
  for (const event of outcome.leaseEnding) {
    fail(spans.get(event.id), 'not sent: lease ending', undefined);
  }
}

function fail(span: Span | undefined, message: string, error: unknown): void {
  if (!span) return;
  if (error instanceof Error) span.recordException(error);
  span.setStatus({ code: SpanStatusCode.ERROR, message });
  span.end();
}
