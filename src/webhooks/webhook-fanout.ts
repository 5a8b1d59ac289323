import { isResultEventType, RESULT_EVENT_TYPES } from '../events/event-types.js';
import { toKafkaRecord } from '../outbox/cloud-event.js';
import type { EventCompanion, OutboxEvent } from '../outbox/outbox-writer.js';

/**
 * The webhook fan-out: which outbox events are also webhooks (the result types of
 * src/events/), and the part of the outbox writer's statement that stores them for the
 * merchant's endpoints (`webhookFanout`, the companion settlement and refunds write their result
 * events with). Only result events are
 * sent (a payment's or refund's `created` is never: the POST's response already told the
 * merchant).
 */
export const WEBHOOK_EVENT_TYPES = RESULT_EVENT_TYPES;

/**
 * The webhook body of an event: its CloudEvent as the relay publishes it (toKafkaRecord's
 * value), the exact bytes sent and signed on every attempt and replay. Null for an event that
 * is not a webhook type (nothing is stored for it).
 */
function webhookBody(event: OutboxEvent): string | null {
  if (!isResultEventType(event.type)) return null;
  return toKafkaRecord({
    eventId: event.eventId,
    eventType: event.type,
    aggregateId: event.aggregateId,
    data: JSON.parse(event.data) as unknown,
    createdAt: event.createdAt,
    traceparent: event.trace?.traceparent ?? null,
    tracestate: event.trace?.tracestate ?? null,
  }).value;
}

/** The types as an SQL array literal (trusted: the constant above, never input). */
const TYPES_SQL = `ARRAY[${WEBHOOK_EVENT_TYPES.map((type) => `'${type}'`).join(', ')}]::text[]`;

/**
 * Data-modifying CTEs of the outbox writer's one statement, over `from` (an earlier CTE of it
 * with event_id, event_type, aggregate_id, created_at, merchant_id, body and ord, one row per
 * event written to the outbox in that statement), so an event's webhook rows commit with it or
 * not at all:
 * - `webhook_event_rows`: one webhook_events row per event of a webhook type whose merchant has
 *   at least one endpoint, enabled or not (the event is kept for a later replay);
 * - `webhook_delivery_rows`: one webhook_deliveries row per such event and endpoint of its
 *   merchant that is enabled and subscribed to the type ('*' or listed), in event order, so
 *   `seq` (the identity) increases with the events of one payment;
 * - `webhook_job_rows`: the delivery's job, with the delivery's endpoint, payment and seq
 *   (RETURNING delivery_id, for a caller's main SELECT to end the statement with).
 * Reads webhook_endpoints (id, merchant_id, enabled_events, disabled_at) through its
 * (merchant_id, ...) index: one probe per event for a merchant without endpoints.
 */
function webhookFanoutCtes(from: string): string {
  return `webhook_event_rows AS (
       INSERT INTO webhook_events (event_id, merchant_id, payment_id, event_type, body, created_at)
       SELECT e.event_id, e.merchant_id, e.aggregate_id, e.event_type, e.body, e.created_at
         FROM ${from} e
        WHERE e.event_type = ANY (${TYPES_SQL})
          AND EXISTS (SELECT 1 FROM webhook_endpoints w WHERE w.merchant_id = e.merchant_id)
        ORDER BY e.ord
       RETURNING event_id
     ),
     webhook_delivery_rows AS (
       INSERT INTO webhook_deliveries (endpoint_id, event_id, payment_id)
       SELECT w.id, e.event_id, e.aggregate_id
         FROM ${from} e
         JOIN webhook_event_rows stored ON stored.event_id = e.event_id
         JOIN webhook_endpoints w ON w.merchant_id = e.merchant_id
        WHERE w.disabled_at IS NULL
          AND (e.event_type = ANY (w.enabled_events) OR '*' = ANY (w.enabled_events))
        ORDER BY e.ord, w.id
       RETURNING id, endpoint_id, payment_id, seq
     ),
     webhook_job_rows AS (
       INSERT INTO webhook_delivery_jobs (delivery_id, endpoint_id, payment_id, seq)
       SELECT id, endpoint_id, payment_id, seq FROM webhook_delivery_rows
       RETURNING delivery_id
     )`;
}

/** The outbox writer's companion that stores each result event for its merchant's endpoints. */
export const webhookFanout: EventCompanion = {
  name: 'webhook-fanout',
  body: webhookBody,
  ctes: webhookFanoutCtes,
  last: 'webhook_job_rows',
};
