import { z } from 'zod';
import { isEventType } from '../events/event-types.js';

/*
 * Settlement acts on `payment.created` only. The other types of the topic (src/events/) are
 * skipped here: refund events share the topic (keyed by payment id, for order), but refund
 * work is a durable job written with the refund (src/refunds), not consumed from Kafka.
 */

/**
 * The `dataversion` majors this settlement reads (src/outbox/cloud-event.ts). A newer minor is
 * read (unknown fields and values ignored); a newer major is dead-lettered with its event id, so
 * `dlq:replay` puts it back once settlement is upgraded (DESIGN: mixed versions).
 */
export const READABLE_DATA_MAJOR = 1;

/** `MAJOR.MINOR` (more parts tolerated); absent = 1.0, the releases before the attribute. */
const DATA_VERSION = /^(\d{1,6})(\.\d{1,6})*$/;

// Not strict: attributes a newer writer adds (extensions) are ignored.
const envelopeSchema = z.object({
  specversion: z.literal('1.0'),
  id: z.uuid(),
  type: z.string().min(1),
  source: z.string().min(1),
  subject: z.uuid(),
  time: z.iso.datetime(),
  dataversion: z.string().regex(DATA_VERSION).optional(),
  data: z.unknown(),
});

/**
 * What settlement reads of a `payment.created`: the payment id, nothing else (it settles the
 * payment as its row says). Every other field, known or not, and its value are ignored, so a
 * newer API's additions (a field, a currency, a source) never stop settlement.
 */
const createdDataSchema = z.object({ id: z.uuid() });

/** What a `refund.created` event's data must have for a replay to revive its refund job. */
const refundIdSchema = z.object({ id: z.uuid() });

export type ParsedEvent =
  | {
      kind: 'payment.created';
      eventId: string;
      paymentId: string;
    }
  /**
   * A known type settlement does not act on (its own results): skipped, not an error. A
   * `refund.created` names its refund (`refundId`): dlq:replay's copy of one revives the dead
   * refund job; a `payment.authorized` names its payment (`heldPaymentId`): dlq:replay's copy of
   * a dead hold job's letter revives that job.
   */
  | { kind: 'ignored'; eventId: string; type: string; refundId?: string; heldPaymentId?: string }
  /**
   * Unparseable, invalid, or an unknown type: straight to the dead-letter queue, with the
   * envelope's id when it could be read (so `dlq:replay` can put it back once settlement
   * understands it, record 50).
   */
  | { kind: 'poison'; errorClass: string; message: string; eventId?: string };

/**
 * Reads a Kafka record's value as a payment CloudEvent; never throws. `readableMajor` is the
 * newest data major this reader knows (an upgraded reader passes a higher one).
 */
export function parsePaymentEvent(
  value: Buffer | string | null,
  readableMajor = READABLE_DATA_MAJOR,
): ParsedEvent {
  if (value === null) return { kind: 'poison', errorClass: 'empty_message', message: 'no value' };
  let json: unknown;
  try {
    json = JSON.parse(value.toString());
  } catch (error) {
    return { kind: 'poison', errorClass: 'malformed_json', message: (error as Error).message };
  }
  const envelope = envelopeSchema.safeParse(json);
  if (!envelope.success) {
    return { kind: 'poison', errorClass: 'invalid_envelope', message: summarize(envelope.error) };
  }
  const { id, type, subject, data, dataversion } = envelope.data;
  if (!isEventType(type)) {
    return {
      kind: 'poison',
      errorClass: 'unknown_event_type',
      message: `unknown type ${type}`,
      eventId: id,
    };
  }
  if (type === 'refund.created') {
    const refund = refundIdSchema.safeParse(data);
    return refund.success
      ? { kind: 'ignored', eventId: id, type, refundId: refund.data.id }
      : { kind: 'ignored', eventId: id, type };
  }
  if (type === 'payment.authorized') {
    return { kind: 'ignored', eventId: id, type, heldPaymentId: subject };
  }
  if (type !== 'payment.created') return { kind: 'ignored', eventId: id, type };
  // Only what settlement acts on is held to its version: the types it skips stay skipped.
  const major = dataversion === undefined ? 1 : Number(dataversion.split('.')[0]);
  if (major > readableMajor) {
    return {
      kind: 'poison',
      errorClass: 'unsupported_data_version',
      message: `dataversion ${dataversion ?? ''} is newer than major ${String(readableMajor)}`,
      eventId: id,
    };
  }
  const payment = createdDataSchema.safeParse(data);
  if (!payment.success) {
    const message = summarize(payment.error);
    return { kind: 'poison', errorClass: 'invalid_payload', message, eventId: id };
  }
  if (payment.data.id !== subject) {
    const message = 'subject is not data.id';
    return { kind: 'poison', errorClass: 'invalid_payload', message, eventId: id };
  }
  return { kind: 'payment.created', eventId: id, paymentId: payment.data.id };
}

function summarize(error: z.ZodError): string {
  return error.issues
    .slice(0, 3)
    .map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`)
    .join('; ');
}
