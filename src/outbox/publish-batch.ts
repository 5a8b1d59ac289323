import { SpanKind, SpanStatusCode, type Span } from '@opentelemetry/api';
import { isRecordRejected, publish } from '../platform/kafka/kafka.js';
import { tracer } from '../platform/telemetry/tracing.js';
import { toKafkaRecord } from './cloud-event.js';
import type { ClaimedEvent } from './outbox-repository.js';
import type { RelayClaim } from './relay-context.js';
import type { RelayProducer } from './relay-kafka.js';
import { contextOf } from './trace-context.js';

/** What Kafka did with a claimed batch. */
export interface PublishOutcome {
  acked: ClaimedEvent[];
  rejected: { event: ClaimedEvent; error: unknown }[];
  /** Not sent because Kafka is unreachable. */
  unsent: ClaimedEvent[];
  unavailable?: unknown;
  /** Not sent because the claim's lease ends before a send could finish (see RelayClaim). */
  leaseEnding: ClaimedEvent[];
  /** When the send finished (Date.now()): the end of the lag measurement. */
  ackedAt: number;
}

/** The rows to send and the instant (performance.now()) from which they must not be sent. */
type SendableClaim = Pick<RelayClaim, 'events' | 'sendBy'>;

/**
 * Publishes claimed rows (see sendSplitting), each traced row under a PRODUCER span (see
 * startPublishSpans); never throws.
 */
export async function publishBatch(
  producer: RelayProducer,
  claim: SendableClaim,
): Promise<PublishOutcome> {
  const outcome: PublishOutcome = {
    acked: [],
    rejected: [],
    unsent: [],
    leaseEnding: [],
    ackedAt: 0,
  };
  const { events } = claim;
  const spans = startPublishSpans(events);
  if (events.length > 0) await sendSplitting(producer, claim.sendBy, events, outcome);
  outcome.ackedAt = Date.now();
  endPublishSpans(spans, outcome);
  return outcome;
}

/** Thrown instead of sending once the claim's send deadline has passed. */
class LeaseEnding extends Error {}

async function sendEvents(
  producer: RelayProducer,
  sendBy: number,
  events: readonly ClaimedEvent[],
): Promise<void> {
  const byTopic = new Map<string, ReturnType<typeof toKafkaRecord>[]>();
  for (const event of events) {
    const records = byTopic.get(event.topic) ?? [];
    records.push(toKafkaRecord(event));
    byTopic.set(event.topic, records);
  }
  const batches = [...byTopic].map(([topic, records]) => ({ topic, records }));
  const connected = await producer.connected();
  // The fence: checked after any reconnect and right before the records leave, for every send
  // (a halved batch's later halves included). Nothing is awaited between here and the send.
  if (performance.now() >= sendBy) throw new LeaseEnding('lease ending');
  await publish(connected, batches);
}

/**
 * Sends the batch; when the broker refuses a record, halves the batch until the refused rows
 * are isolated, so one poison row costs a few extra sends and never holds back the others.
 * Records of a refused request may already sit on some partitions; sending them again makes
 * duplicates with the same event id, which consumers drop. Stops once Kafka is unreachable or
 * the claim's send deadline passed (the rest of the batch is then unsent, or lease-ending).
 */
async function sendSplitting(
  producer: RelayProducer,
  sendBy: number,
  events: ClaimedEvent[],
  outcome: PublishOutcome,
): Promise<'sent' | 'stopped'> {
  try {
    await sendEvents(producer, sendBy, events);
    outcome.acked.push(...events);
    return 'sent';
  } catch (error) {
    if (error instanceof LeaseEnding) {
      outcome.leaseEnding.push(...events);
      return 'stopped';
    }
    producer.discard();
    const [only] = events;
    if (!isRecordRejected(error)) {
      outcome.unsent.push(...events);
      outcome.unavailable = error;
      return 'stopped';
    }
    if (events.length === 1 && only) {
      outcome.rejected.push({ event: only, error });
      return 'sent';
    }
    const half = Math.ceil(events.length / 2);
    if ((await sendSplitting(producer, sendBy, events.slice(0, half), outcome)) === 'stopped') {
      const rest = events.slice(half);
      if (outcome.unavailable === undefined) outcome.leaseEnding.push(...rest);
      else outcome.unsent.push(...rest);
      return 'stopped';
    }
    return sendSplitting(producer, sendBy, events.slice(half), outcome);
  }
}

/**
 * One PRODUCER span per claimed row that carries a trace context, a child of that context (the
 * POST, or the settlement attempt for a result event), so the relay's publish shows in the
 * payment's trace. Rows without one (tracing off when written) get no span: a batch of
 * untraced rows must not start a root trace each.
 */
function startPublishSpans(events: readonly ClaimedEvent[]): Map<string, Span> {
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
function endPublishSpans(spans: Map<string, Span>, outcome: PublishOutcome): void {
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
