import { z } from 'zod';
import { paymentSchema } from '../payments/payment-schemas.js';

/**
 * The CloudEvents types on the payments topic; settlement acts on `payment.created` only.
 * Refund events share the topic (keyed by payment id, for order) and are skipped here: refund
 * work is a durable job written with the refund (src/refunds), not consumed from Kafka.
 */
export const KNOWN_EVENT_TYPES = [
  'payment.created',
  'payment.settled',
  'payment.failed',
  'refund.created',
  'refund.succeeded',
  'refund.failed',
] as const;

const envelopeSchema = z.object({
  specversion: z.literal('1.0'),
  id: z.uuid(),
  type: z.string().min(1),
  source: z.string().min(1),
  subject: z.uuid(),
  time: z.iso.datetime(),
  data: z.unknown(),
});

/** What a `refund.created` event's data must have for a replay to revive its refund job. */
const refundIdSchema = z.object({ id: z.uuid() });

export type ParsedEvent =
  | {
      kind: 'payment.created';
      eventId: string;
      payment: z.infer<typeof paymentSchema>;
    }
  /**
   * A known type settlement does not act on (its own results): skipped, not an error. A
   * `refund.created` names its refund (`refundId`): dlq:replay's copy of one revives the dead
   * refund job.
   */
  | { kind: 'ignored'; eventId: string; type: string; refundId?: string }
  /**
   * Unparseable, invalid, or an unknown type: straight to the dead-letter queue, with the
   * envelope's id when it could be read (so `dlq:replay` can put it back once settlement
   * understands it, record 50).
   */
  | { kind: 'poison'; errorClass: string; message: string; eventId?: string };

/** Reads a Kafka record's value as a payment CloudEvent; never throws. */
export function parsePaymentEvent(value: Buffer | string | null): ParsedEvent {
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
  const { id, type, subject, data } = envelope.data;
  if (!(KNOWN_EVENT_TYPES as readonly string[]).includes(type)) {
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
  if (type !== 'payment.created') return { kind: 'ignored', eventId: id, type };
  const payment = paymentSchema.safeParse(data);
  if (!payment.success) {
    const message = summarize(payment.error);
    return { kind: 'poison', errorClass: 'invalid_payload', message, eventId: id };
  }
  if (payment.data.id !== subject) {
    const message = 'subject is not data.id';
    return { kind: 'poison', errorClass: 'invalid_payload', message, eventId: id };
  }
  return { kind: 'payment.created', eventId: id, payment: payment.data };
}

function summarize(error: z.ZodError): string {
  return error.issues
    .slice(0, 3)
    .map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`)
    .join('; ');
}
