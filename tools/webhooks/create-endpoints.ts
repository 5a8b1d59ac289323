import { randomBytes } from 'node:crypto';
import type { WebhookReceiver } from './receiver.js';

export interface CreatedEndpoint {
  id: string;
  url: string;
}

/**
 * For each merchant (by API key), creates a webhook endpoint pointing at `receiver`
 * (`<origin>/hooks/<token>/<n>`) through the API (`POST /webhook_endpoints`), and gives the receiver the
 * secret shown at creation for that path. What k6/run.sh does when WEBHOOKS=1.
 */
export async function createEndpointsFor(
  receiver: WebhookReceiver,
  apiUrl: string,
  apiKeys: readonly string[],
  enabledEvents: readonly string[] = ['*'],
  timeoutMs = 10_000,
): Promise<CreatedEndpoint[]> {
  const created: CreatedEndpoint[] = [];
  // A token per set: an endpoint left by an earlier run whose receiver had this port never
  // shares a URL with these.
  const token = randomBytes(4).toString('hex');
  for (const [index, apiKey] of apiKeys.entries()) {
    const path = `/hooks/${token}/${index + 1}`;
    const url = `${receiver.origin}${path}`;
    const res = await fetch(`${apiUrl.replace(/\/$/, '')}/webhook_endpoints`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        url,
        enabled_events: enabledEvents,
        description: 'webhook receiver (tools/webhooks)',
      }),
      signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await res.text();
    if (res.status !== 201)
      throw new Error(`POST /webhook_endpoints answered ${res.status}: ${text.slice(0, 500)}`);
    const body = JSON.parse(text) as { id?: unknown; secret?: unknown };
    if (typeof body.id !== 'string' || typeof body.secret !== 'string')
      throw new Error('POST /webhook_endpoints answered 201 without an id and a secret');
    receiver.setSecrets([body.secret], path);
    created.push({ id: body.id, url });
  }
  return created;
}
