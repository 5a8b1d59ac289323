// A CloudEvents 1.0 structured-mode JSON value as payments.events carries it (docs/asyncapi.yaml).
// The kit's own copy of the shape, so it imports nothing of the service.

export interface CloudEvent {
  specversion: string;
  /** The event id: the same for every copy of the event (the inbox's key). */
  id: string;
  type: string;
  source: string;
  /** The payment id (the Kafka key): the order of events is checked per subject. */
  subject: string;
  time: string;
  datacontenttype?: string;
  data: unknown;
  traceparent?: string;
  tracestate?: string;
}

export type ParsedEvent = { ok: true; event: CloudEvent } | { ok: false; reason: string };

const MAX_ID_LENGTH = 200;

/** Parses and checks a record's value; never throws (a bad record is reported, not retried). */
export function parseCloudEvent(value: Buffer | string | null): ParsedEvent {
  if (value === null) return { ok: false, reason: 'the record has no value' };
  let parsed: unknown;
  try {
    parsed = JSON.parse(value.toString());
  } catch {
    return { ok: false, reason: 'the value is not JSON' };
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    return { ok: false, reason: 'the value is not a JSON object' };
  }
  const envelope = parsed as Record<string, unknown>;
  if (envelope.specversion !== '1.0') return { ok: false, reason: 'specversion is not "1.0"' };
  for (const name of ['id', 'type', 'source', 'subject', 'time'] as const) {
    const attribute = envelope[name];
    if (typeof attribute !== 'string' || attribute === '' || attribute.length > MAX_ID_LENGTH) {
      return { ok: false, reason: `${name} is not a non-empty string of at most 200 characters` };
    }
  }
  return { ok: true, event: envelope as unknown as CloudEvent };
}
