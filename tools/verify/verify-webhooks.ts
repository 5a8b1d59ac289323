import { paymentEventId } from '../../src/payments/payment-event-id.js';
import { refundEventId } from '../../src/refunds/refund-event-id.js';
import type { Queryable } from '../../src/platform/database/db.js';
import { normalizeUrl, originOf, type ReceiptsFile } from '../webhooks/webhook-receipt.js';
import { checkWebhookReceipts, type ReceiptReport } from './check-webhook-receipts.js';
import { loadWebhookFacts } from './load-webhook-facts.js';
import type { Violation } from './violation.js';
import type { VerifyScope } from './verify-scope.js';

export interface WebhookReport {
  /** Endpoints of the merchants in scope. */
  endpoints: number;
  /** Stored events (webhook_events) of the payments in scope. */
  events: number;
  deliveries: { total: number; delivered: number; pending: number; failed: number };
  /** Pending deliveries within the grace period (still being retried: not judged). */
  inFlight: number;
  /** Failed deliveries by failed_reason: reported, not violations (the merchant sees them). */
  failedReasons: Record<string, number>;
  /** When receipts files were given: what the receivers got. */
  receipts: ReceiptReport | null;
}

/**
 * The webhook invariants (issue 27) over the payments in scope: every settled or failed payment
 * and every refund outcome of a merchant with an endpoint is stored as a webhook event; every
 * stored event has a delivery to each endpoint that subscribes to it (created after the endpoint,
 * while it was enabled); every delivery is delivered, or failed with a reason (reported), after
 * the grace period; and, given the receivers' receipts, each delivered event reached its endpoint
 * with webhook-id = the event id, one id per event, a valid signature, in order per payment.
 */
export async function verifyWebhooks(
  db: Queryable,
  scope: VerifyScope,
  options: {
    graceSeconds: number;
    retentionSeconds: number;
    /** Read after the database (see VerifyOptions.webhookReceipts). */
    receipts: (() => Promise<ReceiptsFile>) | null;
  },
): Promise<{ report: WebhookReport; violations: Violation[] }> {
  const facts = await loadWebhookFacts(db, scope, options.retentionSeconds);
  const violations: Violation[] = [];

  for (const result of facts.results) {
    const eventId =
      result.refund_id === null
        ? paymentEventId(result.payment_id, `payment.${result.status}` as 'payment.settled')
        : refundEventId(result.refund_id, `refund.${result.status}` as 'refund.succeeded');
    if (!facts.events.has(eventId)) {
      const what = result.refund_id === null ? 'payment' : `refund ${result.refund_id}`;
      violations.push({
        code: 'webhook_event_missing',
        paymentId: result.payment_id,
        detail: `${what} ${result.status}: no stored webhook event ${eventId}`,
      });
    }
  }
  for (const missing of facts.missing)
    violations.push({
      code: 'webhook_delivery_missing',
      paymentId: missing.payment_id,
      detail: `${missing.event_type} ${missing.event_id} to endpoint ${missing.endpoint_id}`,
    });

  const deliveries = { total: 0, delivered: 0, pending: 0, failed: 0 };
  const failedReasons: Record<string, number> = {};
  let inFlight = 0;
  for (const delivery of facts.deliveries) {
    deliveries.total++;
    deliveries[delivery.status]++;
    if (delivery.status === 'failed') {
      const reason = delivery.failed_reason ?? 'no reason';
      failedReasons[reason] = (failedReasons[reason] ?? 0) + 1;
    }
    if (delivery.status !== 'pending') continue;
    if (delivery.age_s <= options.graceSeconds) inFlight++;
    else
      violations.push({
        code: 'webhook_delivery_unresolved',
        paymentId: delivery.payment_id,
        detail:
          `${delivery.event_type} ${delivery.event_id} to endpoint ${delivery.endpoint_id}: ` +
          `pending ${Math.round(delivery.age_s)} s after ${delivery.attempts} attempts`,
      });
  }

  let receipts: ReceiptReport | null = null;
  if (options.receipts) {
    const read = await options.receipts();
    const origins = new Set([...read.origins].map(originOf));
    const judged = facts.deliveries.filter((delivery) =>
      origins.has(originOf(delivery.endpoint_url)),
    );
    // Requests to URLs of no endpoint in scope (another run's merchants, a leftover endpoint
    // whose URL a receiver's port now answers) are counted, not judged.
    const inScope = new Set(facts.endpointUrls.map(normalizeUrl));
    const mine = read.receipts.filter((receipt) => inScope.has(normalizeUrl(receipt.url)));
    const checked = checkWebhookReceipts(mine, judged);
    checked.report.foreign = read.receipts.length - mine.length;
    receipts = checked.report;
    violations.push(...checked.violations);
  }

  return {
    report: {
      endpoints: facts.endpointUrls.length,
      events: facts.events.size,
      deliveries,
      inFlight,
      failedReasons,
      receipts,
    },
    violations,
  };
}
