import { Webhook } from 'standardwebhooks';

/**
 * The webhook-signature header: `v1,<base64 HMAC-SHA256 of "id.timestamp.body">` for every
 * secret given (the current one and any rotated-out one still in its grace period), space
 * separated, as Standard Webhooks lets a receiver accept any of them. Signed by the
 * `standardwebhooks` library, the one merchants verify with.
 */
export function webhookSignature(
  secrets: readonly string[],
  eventId: string,
  timestamp: Date,
  body: string,
): string {
  return secrets.map((secret) => new Webhook(secret).sign(eventId, timestamp, body)).join(' ');
}
