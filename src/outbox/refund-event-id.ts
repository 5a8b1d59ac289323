import { v5 as uuidv5 } from 'uuid';
import { EVENT_ID_NAMESPACE } from './event-id.js';

export type RefundEventType = 'refund.created' | 'refund.succeeded' | 'refund.failed';

/** Like payment events: `refund:{refund_id}:{event_type}` in the service's namespace. */
export function refundEventId(refundId: string, type: RefundEventType): string {
  return uuidv5(`refund:${refundId}:${type}`, EVENT_ID_NAMESPACE);
}
