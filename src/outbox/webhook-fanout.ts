/**
 * The webhook fan-out: which outbox events are also webhooks. Only result events are sent
 * (a payment's or refund's `created` is never: the POST's response already told the merchant).
 */
export const WEBHOOK_EVENT_TYPES = [
  'payment.settled',
  'payment.failed',
  'refund.succeeded',
  'refund.failed',
] as const;

export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/** Whether `type` is one of the webhook event types. */
export function isWebhookEventType(type: string): type is WebhookEventType {
  return (WEBHOOK_EVENT_TYPES as readonly string[]).includes(type);
}
