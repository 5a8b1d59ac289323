/** One outbox row as the relay reads it. */
export interface OutboxEvent {
  eventId: string;
  eventType: string;
  aggregateId: string;
  data: unknown;
  createdAt: Date;
  /** The row's W3C trace context (migration 0013); absent or null when it has none. */
  traceparent?: string | null;
  tracestate?: string | null;
}

/** `source` of every CloudEvent this service emits (a URI-reference, per CloudEvents 1.0). */
export const EVENT_SOURCE = '/payments-service';

/**
 * `dataversion` (a CloudEvents extension attribute, and the `ce_dataversion` header) of every
 * event: the version of its `data`, `MAJOR.MINOR`. A minor bump only adds (optional fields, new
 * values of an open field): readers of the same major read it and ignore what they do not know.
 * A major bump is anything else; a reader of an older major dead-letters the event replayably
 * (never drops it) until it is upgraded. An event without the attribute is 1.0 (the releases
 * before it). One version for every type today: they all carry the payment or refund resource.
 * DESIGN: mixed versions.
 */
export const DATA_VERSION = '1.0';

export interface KafkaRecord {
  key: string;
  value: string;
  headers: Record<string, string>;
}

/**
 * The Kafka record of an outbox row: key = payment id, value = CloudEvents 1.0 structured JSON,
 * and `ce_*` headers so consumers can filter without parsing. Deterministic: the same row always
 * gives the same bytes, so a republished copy is identical to the original.
 */
export function toKafkaRecord(event: OutboxEvent): KafkaRecord {
  const time = event.createdAt.toISOString();
  const envelope = {
    specversion: '1.0',
    id: event.eventId,
    type: event.eventType,
    source: EVENT_SOURCE,
    subject: event.aggregateId,
    time,
    datacontenttype: 'application/json',
    dataversion: DATA_VERSION,
    data: event.data,
    // CloudEvents distributed-tracing extension: the context the event was created in, copied
    // unchanged from the row (so a republished copy keeps the same bytes).
    ...traceAttributes(event),
  };
  const trace = traceAttributes(event);
  return {
    key: event.aggregateId,
    value: JSON.stringify(envelope),
    headers: {
      ce_specversion: '1.0',
      ce_id: event.eventId,
      ce_type: event.eventType,
      ce_source: EVENT_SOURCE,
      ce_subject: event.aggregateId,
      ce_time: time,
      ce_dataversion: DATA_VERSION,
      ...(trace.traceparent === undefined ? {} : { ce_traceparent: trace.traceparent }),
      ...(trace.tracestate === undefined ? {} : { ce_tracestate: trace.tracestate }),
      'content-type': 'application/cloudevents+json; charset=utf-8',
    },
  };
}

function traceAttributes(event: OutboxEvent): { traceparent?: string; tracestate?: string } {
  const attributes: { traceparent?: string; tracestate?: string } = {};
  if (event.traceparent) attributes.traceparent = event.traceparent;
  if (event.traceparent && event.tracestate) attributes.tracestate = event.tracestate;
  return attributes;
}
