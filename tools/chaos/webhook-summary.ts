import { isResultEventType } from '../../src/events/event-types.js';
import { paymentEventId, type PaymentEventType } from '../../src/payments/payment-event-id.js';
import { refundEventId, type RefundEventType } from '../../src/refunds/refund-event-id.js';
import type { Queryable } from '../../src/platform/database/db.js';
import { normalizeUrl, readReceiptsFiles } from '../webhooks/webhook-receipt.js';
import type { ChaosReceivers } from './webhook-receivers.js';

/** What the run's webhook receivers got, judged against the run's results (after the drain). */
export interface WebhookSummary {
  /** (endpoint, event) pairs owed: each result event of a merchant times its endpoints. */
  owed: number;
  /** Owed pairs received answered 2xx at least once. */
  delivered: number;
  /** Owed pairs never received with a 2xx, by the state of their delivery row. */
  lost: number;
  lostByState: Record<string, number>;
  /** Events received under two webhook-ids, plus webhook-ids received for two events. */
  reidentified: number;
  /** Owed pairs first received (2xx) before an earlier event of their payment at the endpoint. */
  outOfOrder: number;
  /** Requests whose signature no secret verifies, or whose webhook-id is not the event's id. */
  badSignature: number;
  wrongId: number;
  requests: { total: number; ok: number; repeated: number; refused: number; unanswered: number };
  /** Per receiver: requests, and requests answered 2xx. */
  perReceiver: { origin: string; label: string; requests: number; ok: number }[];
  /** A few lost pairs, for the report. */
  examples: string[];
}

interface EndpointRow {
  id: string;
  merchant_id: string;
  url: string;
}
interface ResultRow {
  merchant_id: string;
  payment_id: string;
  refund_id: string | null;
  status: string;
}
interface DeliveryRow {
  endpoint_id: string;
  event_id: string;
  payment_id: string;
  seq: string;
  status: string;
  failed_reason: string | null;
}

const is2xx = (status: number | null) => status !== null && status >= 200 && status < 300;

/**
 * Judges the receivers' receipts against the run's database (read as the owner), independently
 * of the webhook tables' own view: every settled or failed payment and every refund outcome of a
 * merchant is owed to each of its endpoints at the receivers (all subscribe to every type and
 * were created before the load) and is lost unless a 2xx receipt has its event id; one event
 * must come under one webhook-id, and per endpoint and payment the events' first 2xx receipts
 * come in the deliveries' seq order.
 */
export async function summarizeWebhooks(
  db: Queryable,
  receivers: ChaosReceivers,
): Promise<WebhookSummary> {
  const endpointIds = receivers.set.endpoints.flat().map((endpoint) => endpoint.id);
  const endpoints = (
    await db.query<EndpointRow>(
      'SELECT id, merchant_id, url FROM webhook_endpoints WHERE id = ANY($1::uuid[])',
      [endpointIds],
    )
  ).rows;
  const merchants = [...new Set(endpoints.map((endpoint) => endpoint.merchant_id))];
  const results = (
    await db.query<ResultRow>(
      `SELECT p.merchant_id, p.id AS payment_id, NULL::uuid AS refund_id, p.status
         FROM payments p
        WHERE p.merchant_id = ANY($1::uuid[]) AND p.status IN ('settled', 'failed')
       UNION ALL
       SELECT r.merchant_id, r.payment_id, r.id AS refund_id, r.status
         FROM refunds r
        WHERE r.merchant_id = ANY($1::uuid[]) AND r.status IN ('succeeded', 'failed')`,
      [merchants],
    )
  ).rows;
  const deliveries = (
    await db.query<DeliveryRow>(
      `SELECT endpoint_id, event_id, payment_id, seq::text AS seq, status, failed_reason
         FROM webhook_deliveries WHERE endpoint_id = ANY($1::uuid[])`,
      [endpointIds],
    )
  ).rows;
  const { receipts } = await readReceiptsFiles(receivers.set.files);

  const summary: WebhookSummary = {
    owed: 0,
    delivered: 0,
    lost: 0,
    lostByState: {},
    reidentified: 0,
    outOfOrder: 0,
    badSignature: 0,
    wrongId: 0,
    requests: { total: receipts.length, ok: 0, repeated: 0, refused: 0, unanswered: 0 },
    perReceiver: receivers.set.receivers.map((receiver, i) => ({
      origin: receiver.origin,
      label: receivers.labels[i] ?? '',
      requests: 0,
      ok: 0,
    })),
    examples: [],
  };

  /** `${url} ${webhook-id}` -> the time of its first 2xx. */
  const firstOk = new Map<string, number>();
  const idsPerEvent = new Map<string, Set<string>>();
  const eventsPerId = new Map<string, Set<string>>();
  const add = (map: Map<string, Set<string>>, key: string, value: string) => {
    map.set(key, (map.get(key) ?? new Set()).add(value));
  };
  for (const receipt of receipts) {
    const url = normalizeUrl(receipt.url);
    const id = receipt.webhook_id ?? '';
    const event = `${receipt.type ?? ''} ${receipt.data_id ?? ''}`;
    add(idsPerEvent, `${url} ${event}`, id);
    add(eventsPerId, `${url} ${id}`, event);
    if (!receipt.signature_valid) summary.badSignature++;
    if (id === '' || id !== receipt.event_id || id !== expectedId(receipt.type, receipt.data_id))
      summary.wrongId++;
    const counted = summary.perReceiver.find((r) => url.startsWith(`${r.origin}/`));
    if (counted) counted.requests++;
    if (receipt.status === null) summary.requests.unanswered++;
    else if (!is2xx(receipt.status)) summary.requests.refused++;
    if (!is2xx(receipt.status)) continue;
    summary.requests.ok++;
    if (counted) counted.ok++;
    const at = Date.parse(receipt.received_at);
    const seen = firstOk.get(`${url} ${id}`);
    if (seen !== undefined) summary.requests.repeated++;
    if (seen === undefined || at < seen) firstOk.set(`${url} ${id}`, at);
  }
  for (const ids of idsPerEvent.values()) if (ids.size > 1) summary.reidentified++;
  for (const events of eventsPerId.values()) if (events.size > 1) summary.reidentified++;

  const deliveryOf = new Map(deliveries.map((d) => [`${d.endpoint_id} ${d.event_id}`, d]));
  for (const result of results) {
    const eventId =
      result.refund_id === null
        ? paymentEventId(result.payment_id, `payment.${result.status}` as 'payment.settled')
        : refundEventId(result.refund_id, `refund.${result.status}` as 'refund.succeeded');
    for (const endpoint of endpoints) {
      if (endpoint.merchant_id !== result.merchant_id) continue;
      summary.owed++;
      if (firstOk.has(`${normalizeUrl(endpoint.url)} ${eventId}`)) {
        summary.delivered++;
        continue;
      }
      summary.lost++;
      const delivery = deliveryOf.get(`${endpoint.id} ${eventId}`);
      const state = !delivery
        ? 'no delivery row'
        : delivery.status === 'failed'
          ? `failed (${delivery.failed_reason ?? 'no reason'})`
          : delivery.status;
      summary.lostByState[state] = (summary.lostByState[state] ?? 0) + 1;
      if (summary.examples.length < 5)
        summary.examples.push(
          `${eventId} (payment ${result.payment_id}) at ${endpoint.url}: ${state}`,
        );
    }
  }

  const urlOf = new Map(endpoints.map((endpoint) => [endpoint.id, normalizeUrl(endpoint.url)]));
  const latest = new Map<string, number>();
  for (const delivery of [...deliveries].sort((a, b) => Number(a.seq) - Number(b.seq))) {
    const at = firstOk.get(`${urlOf.get(delivery.endpoint_id) ?? ''} ${delivery.event_id}`);
    if (at === undefined) continue;
    const group = `${delivery.endpoint_id} ${delivery.payment_id}`;
    const before = latest.get(group);
    if (before !== undefined && at < before) summary.outOfOrder++;
    if (before === undefined || at > before) latest.set(group, at);
  }
  return summary;
}

/** The event id the service mints for (type, data.id), or null for anything else. */
function expectedId(type: string | null, dataId: string | null): string | null {
  if (type === null || dataId === null) return null;
  if (!isResultEventType(type)) return null;
  if (type.startsWith('payment.')) return paymentEventId(dataId, type as PaymentEventType);
  return refundEventId(dataId, type as RefundEventType);
}

/** The report's Webhooks section. */
export function webhookLines(summary: WebhookSummary): string[] {
  const { requests } = summary;
  const lines = [
    '',
    'Webhooks (three receivers, an endpoint per merchant at each; judged after the drain)',
    `  webhook deliveries: ${summary.delivered} delivered, ${summary.lost} lost, ${summary.reidentified} re-identified, ${summary.outOfOrder} out of order`,
    `  owed: ${summary.owed} (endpoint, event) pairs; bad signatures ${summary.badSignature}, wrong webhook-ids ${summary.wrongId}`,
    `  requests: ${requests.total} (${requests.ok} answered 2xx, of them ${requests.repeated} repeats of an id already delivered; ${requests.refused} refused, ${requests.unanswered} never answered)`,
  ];
  for (const receiver of summary.perReceiver)
    lines.push(
      `  ${receiver.origin} (${receiver.label}): ${receiver.requests} requests, ${receiver.ok} answered 2xx`,
    );
  const states = Object.entries(summary.lostByState);
  if (states.length > 0)
    lines.push(`  lost, by delivery state: ${states.map(([s, n]) => `${s} ${n}`).join(', ')}`);
  for (const example of summary.examples) lines.push(`    ${example}`);
  return lines;
}

/** Why the webhooks fail the run: anything lost, re-identified, out of order or badly signed. */
export function webhookFailures(summary: WebhookSummary): string[] {
  const failures: string[] = [];
  if (summary.lost > 0) failures.push(`webhooks: ${summary.lost} deliveries lost`);
  if (summary.reidentified > 0)
    failures.push(`webhooks: ${summary.reidentified} deliveries re-identified`);
  if (summary.outOfOrder > 0) failures.push(`webhooks: ${summary.outOfOrder} out of order`);
  if (summary.badSignature + summary.wrongId > 0)
    failures.push(
      `webhooks: ${summary.badSignature} bad signatures, ${summary.wrongId} wrong webhook-ids`,
    );
  return failures;
}
