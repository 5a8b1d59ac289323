import { eventIdOf, type PaymentEventType } from '../events/event-types.js';

export type { PaymentEventType } from '../events/event-types.js';

/** A payment event's id: `payment:{payment_id}:{event_type}` in the events' namespace. */
export function paymentEventId(paymentId: string, type: PaymentEventType): string {
  return eventIdOf(`payment:${paymentId}:${type}`);
}
