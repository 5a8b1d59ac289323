import type { WebhookDeliveryResource } from './webhook-delivery-schemas.js';
import type { WebhookEndpointResource } from './webhook-endpoint-schemas.js';

/** A webhook_endpoints row as the repository reads it. */
export interface EndpointRow {
  id: string;
  url: string;
  enabled_events: string[];
  description: string | null;
  disabled_at: Date | null;
  disabled_reason: string | null;
  failing_since: Date | null;
  created_at: Date;
  updated_at: Date;
}

export const ENDPOINT_COLUMNS =
  'id, url, enabled_events, description, disabled_at, disabled_reason, failing_since, created_at, updated_at';

const iso = (at: Date | null) => (at === null ? null : at.toISOString());

export function toWebhookEndpointResource(row: EndpointRow): WebhookEndpointResource {
  return {
    id: row.id,
    object: 'webhook_endpoint',
    url: row.url,
    enabled_events: row.enabled_events as WebhookEndpointResource['enabled_events'],
    description: row.description,
    disabled: row.disabled_at !== null,
    disabled_reason: row.disabled_reason as WebhookEndpointResource['disabled_reason'],
    disabled_at: iso(row.disabled_at),
    failing_since: iso(row.failing_since),
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

/** A delivery joined with its event's type and its job's due time. */
export interface DeliveryRow {
  id: string;
  endpoint_id: string;
  event_id: string;
  event_type: string;
  payment_id: string;
  status: WebhookDeliveryResource['status'];
  attempts: number;
  last_attempt_at: Date | null;
  last_status_code: number | null;
  last_latency_ms: number | null;
  last_error: string | null;
  next_attempt_at: Date | null;
  delivered_at: Date | null;
  failed_reason: string | null;
  created_at: Date;
}

/** The columns of DeliveryRow for `webhook_deliveries d JOIN webhook_events e LEFT JOIN webhook_delivery_jobs j`. */
export const DELIVERY_COLUMNS = `d.id, d.endpoint_id, d.event_id, e.event_type, d.payment_id, d.status,
  d.attempts, d.last_attempt_at, d.last_status_code, d.last_latency_ms, d.last_error,
  CASE WHEN d.status = 'pending' AND j.state = 'pending'
       THEN greatest(j.next_attempt_at, coalesce(j.locked_until, j.next_attempt_at)) END
    AS next_attempt_at,
  d.delivered_at, d.failed_reason, d.created_at`;

export const DELIVERY_FROM = `webhook_deliveries d
  JOIN webhook_events e ON e.event_id = d.event_id
  LEFT JOIN webhook_delivery_jobs j ON j.delivery_id = d.id`;

export function toWebhookDeliveryResource(row: DeliveryRow): WebhookDeliveryResource {
  return {
    id: row.id,
    object: 'webhook_delivery',
    endpoint_id: row.endpoint_id,
    event_id: row.event_id,
    event_type: row.event_type as WebhookDeliveryResource['event_type'],
    payment_id: row.payment_id,
    status: row.status,
    attempts: row.attempts,
    last_attempt_at: iso(row.last_attempt_at),
    last_status_code: row.last_status_code,
    last_latency_ms: row.last_latency_ms,
    last_error: row.last_error,
    next_attempt_at: iso(row.next_attempt_at),
    delivered_at: iso(row.delivered_at),
    failed_reason: row.failed_reason,
    created_at: row.created_at.toISOString(),
  };
}
