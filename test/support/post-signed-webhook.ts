import { Webhook } from 'standardwebhooks';

/**
 * POSTs `body` to `url` as the delivery worker sends a webhook: webhook-id, webhook-timestamp
 * (now) and a webhook-signature by each of `secrets` (standardwebhooks). Resolves with the status.
 */
export async function postSignedWebhook(
  url: string,
  eventId: string,
  body: string,
  secrets: readonly string[],
): Promise<number> {
  const now = new Date();
  const res = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'webhook-id': eventId,
      'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
      'webhook-signature': secrets
        .map((secret) => new Webhook(secret).sign(eventId, now, body))
        .join(' '),
    },
    body,
    signal: AbortSignal.timeout(10_000),
  });
  await res.text();
  return res.status;
}
