import { paymentEventId, type PaymentEventType } from '../../src/payments/payment-event-id.js';
import { refundEventId, type RefundEventType } from '../../src/refunds/refund-event-id.js';
import { normalizeUrl, type WebhookReceipt } from '../webhooks/webhook-receipt.js';
import type { DeliveryFact } from './load-webhook-facts.js';
import type { Violation } from './violation.js';

export interface ReceiptReport {
  /** Requests recorded by the receivers to the endpoints in scope. */
  read: number;
  /** Requests to URLs of no endpoint in scope: not judged. */
  foreign: number;
  /** Distinct (URL, webhook-id) pairs answered 2xx. */
  received: number;
  /** Requests beyond the first 2xx of their (URL, webhook-id): retries after a lost answer. */
  repeated: number;
  /** Requests answered with something else than 2xx (or never answered). */
  refused: number;
  /** Delivered deliveries to the receivers' endpoints that were judged against the receipts. */
  judged: number;
}

const is2xx = (status: number | null) => status !== null && status >= 200 && status < 300;

/** The event id the service mints for (type, data.id) (UUIDv5, src/outbox), or null. */
function expectedEventId(type: string | null, dataId: string | null): string | null {
  if (type === null || dataId === null) return null;
  if (type.startsWith('payment.')) return paymentEventId(dataId, type as PaymentEventType);
  if (type.startsWith('refund.')) return refundEventId(dataId, type as RefundEventType);
  return null;
}

/**
 * What webhook receivers recorded (tools/webhooks/receiver.ts) against the deliveries to their
 * endpoints (`deliveries`: those whose URL is on a receiver's origin):
 * - every request is signed validly (webhook_bad_signature) and its webhook-id is the event id:
 *   the CloudEvent's id and the UUIDv5 of (type, data.id) (webhook_wrong_id);
 * - one id per event: all requests to one URL about one (subject, type, data.id) carry the same
 *   webhook-id (webhook_reidentified);
 * - every delivered delivery has a 2xx receipt at its endpoint's URL (webhook_not_received);
 * - per endpoint and payment, events arrive in order: a later event's (by delivery seq) first
 *   2xx receipt never precedes an earlier event's first 2xx receipt (webhook_out_of_order).
 */
export function checkWebhookReceipts(
  receipts: readonly WebhookReceipt[],
  deliveries: readonly DeliveryFact[],
): { report: ReceiptReport; violations: Violation[] } {
  const violations: Violation[] = [];
  const report: ReceiptReport = {
    read: receipts.length,
    foreign: 0,
    received: 0,
    repeated: 0,
    refused: 0,
    judged: 0,
  };
  /** `${url} ${webhook-id}` -> the time of its first 2xx. */
  const firstOk = new Map<string, number>();
  /** `${url} ${subject} ${type} ${data.id}` -> the webhook-ids seen. */
  const idsPerEvent = new Map<string, Set<string>>();

  for (const receipt of receipts) {
    const url = normalizeUrl(receipt.url);
    const paymentId = receipt.subject ?? undefined;
    const about = `${receipt.type ?? '?'} ${receipt.webhook_id ?? '(no webhook-id)'} at ${url}`;
    if (!receipt.signature_valid)
      violations.push({
        code: 'webhook_bad_signature',
        paymentId,
        detail: `${about}, ${receipt.received_at}: no secret verifies it`,
      });
    const expected = expectedEventId(receipt.type, receipt.data_id);
    if (
      receipt.webhook_id === null ||
      receipt.webhook_id !== receipt.event_id ||
      receipt.webhook_id !== expected
    )
      violations.push({
        code: 'webhook_wrong_id',
        paymentId,
        detail: `${about}: body id ${receipt.event_id ?? 'none'}, expected ${expected ?? 'unknown'}`,
      });
    const eventKey = `${url} ${receipt.subject ?? ''} ${receipt.type ?? ''} ${receipt.data_id ?? ''}`;
    const ids = idsPerEvent.get(eventKey) ?? new Set<string>();
    ids.add(receipt.webhook_id ?? '');
    idsPerEvent.set(eventKey, ids);

    if (!is2xx(receipt.status)) {
      report.refused++;
      continue;
    }
    const key = `${url} ${receipt.webhook_id ?? ''}`;
    const at = Date.parse(receipt.received_at);
    const seen = firstOk.get(key);
    if (seen === undefined) {
      report.received++;
      firstOk.set(key, at);
    } else {
      report.repeated++;
      if (at < seen) firstOk.set(key, at);
    }
  }
  for (const [eventKey, ids] of idsPerEvent)
    if (ids.size > 1)
      violations.push({
        code: 'webhook_reidentified',
        paymentId: eventKey.split(' ')[1],
        detail: `${eventKey}: ${ids.size} webhook-ids (${[...ids].join(', ')})`,
      });

  // Per (endpoint, payment), in seq order: the latest first-2xx time so far.
  const latest = new Map<string, { at: number; eventId: string; type: string }>();
  for (const delivery of [...deliveries].sort((a, b) => Number(a.seq) - Number(b.seq))) {
    const url = normalizeUrl(delivery.endpoint_url);
    const at = firstOk.get(`${url} ${delivery.event_id}`);
    if (delivery.status === 'delivered') {
      report.judged++;
      if (at === undefined)
        violations.push({
          code: 'webhook_not_received',
          paymentId: delivery.payment_id,
          detail: `${delivery.event_type} ${delivery.event_id}: delivered to ${url} but no 2xx receipt there`,
        });
    }
    if (at === undefined) continue;
    const group = `${delivery.endpoint_id} ${delivery.payment_id}`;
    const before = latest.get(group);
    if (before && at < before.at)
      violations.push({
        code: 'webhook_out_of_order',
        paymentId: delivery.payment_id,
        detail:
          `${delivery.event_type} ${delivery.event_id} first received ${new Date(at).toISOString()}, ` +
          `before the earlier ${before.type} ${before.eventId} (${new Date(before.at).toISOString()}) at ${url}`,
      });
    if (!before || at > before.at)
      latest.set(group, { at, eventId: delivery.event_id, type: delivery.event_type });
  }
  return { report, violations };
}
