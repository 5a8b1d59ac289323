import { v5 as uuidv5 } from 'uuid';

/**
 * The fixed namespace of every event id this service mints (UUIDv5). Documented in DESIGN.md
 * and the AsyncAPI document; changing it would change every event id, so it never changes.
 */
export const EVENT_ID_NAMESPACE = '4f0c8a3e-6d1b-5a7e-9c2f-8b3d1e5a7c90';

export type PaymentEventType = 'payment.created' | 'payment.settled' | 'payment.failed';

/**
 * The event id is derived from the business identity, `payment:{payment_id}:{event_type}`, never
 * from a Kafka position: a republished copy lands at a new offset but carries the same id, so
 * consumers deduplicate it.
 */
export function paymentEventId(paymentId: string, type: PaymentEventType): string {
  return uuidv5(`payment:${paymentId}:${type}`, EVENT_ID_NAMESPACE);
}
