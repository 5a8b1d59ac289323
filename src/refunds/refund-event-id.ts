import { eventIdOf, type RefundEventType } from '../events/event-types.js';

export type { RefundEventType } from '../events/event-types.js';

/** A refund event's id: `refund:{refund_id}:{event_type}` in the events' namespace. */
export function refundEventId(refundId: string, type: RefundEventType): string {
  return eventIdOf(`refund:${refundId}:${type}`);
}
