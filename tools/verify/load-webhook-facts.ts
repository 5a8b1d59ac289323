import type { Queryable } from '../../src/platform/database/db.js';
import {
  SCOPE_PARAMETER_COUNT,
  scopeCte,
  scopeParameters,
  type VerifyScope,
} from './verify-scope.js';

/** One webhook delivery of an event of a payment in scope. */
export interface DeliveryFact {
  id: string;
  endpoint_id: string;
  endpoint_url: string;
  event_id: string;
  event_type: string;
  payment_id: string;
  seq: string;
  status: 'pending' | 'delivered' | 'failed';
  failed_reason: string | null;
  attempts: number;
  age_s: number;
}

/** A stored event that a subscribed endpoint should have a delivery of and has none. */
export interface MissingDelivery {
  event_id: string;
  event_type: string;
  payment_id: string;
  endpoint_id: string;
}

/** A result (payment or refund) of a merchant that had an endpoint before it began. */
export interface ResultFact {
  payment_id: string;
  /** The refund's id for refund results, else null. */
  refund_id: string | null;
  status: 'settled' | 'failed' | 'succeeded';
}

export interface WebhookFacts {
  /** The URLs of the endpoints of the merchants in scope (one per endpoint). */
  endpointUrls: string[];
  events: Set<string>;
  deliveries: DeliveryFact[];
  missing: MissingDelivery[];
  results: ResultFact[];
}

/**
 * How far an event's or endpoint's timestamps must be apart before the verifier judges whether
 * the fan-out saw the endpoint: the fan-out reads the endpoints in its own transaction, so an
 * endpoint committed at the same moment may be invisible to it (and its created_at is earlier
 * than its commit).
 */
const MARGIN = "interval '1 second'";

/**
 * The webhook facts of the payments in scope (DESIGN.md "Webhooks"), read as the owner: the
 * merchants' endpoints, their stored events, each event's deliveries, and the events a subscribed
 * endpoint has no delivery of. An endpoint is owed an event created after it (by MARGIN) and
 * before it was disabled; its subscription is judged as it is now (a PATCH of enabled_events,
 * or a disable and re-enable, is not in the tables: such an endpoint can show a false missing
 * delivery).
 */
export async function loadWebhookFacts(
  db: Queryable,
  scope: VerifyScope,
  retentionSeconds: number,
): Promise<WebhookFacts> {
  const params = scopeParameters(scope);
  const endpoints = await db.query<{ url: string }>(
    `WITH ${scopeCte()}
     SELECT e.url FROM webhook_endpoints e
      WHERE e.merchant_id IN (SELECT merchant_id FROM scope)`,
    params,
  );
  const events = await db.query<{ event_id: string }>(
    `WITH ${scopeCte()}
     SELECT ev.event_id FROM webhook_events ev JOIN scope s ON s.id = ev.payment_id`,
    params,
  );
  const deliveries = await db.query<DeliveryFact>(
    `WITH ${scopeCte()}
     SELECT d.id, d.endpoint_id, e.url AS endpoint_url, d.event_id, ev.event_type, d.payment_id,
            d.seq::text AS seq, d.status, d.failed_reason, d.attempts,
            extract(epoch FROM now() - d.created_at)::float8 AS age_s
       FROM webhook_deliveries d
       JOIN scope s ON s.id = d.payment_id
       JOIN webhook_events ev ON ev.event_id = d.event_id
       JOIN webhook_endpoints e ON e.id = d.endpoint_id
      ORDER BY d.seq`,
    params,
  );
  const missing = await db.query<MissingDelivery>(
    `WITH ${scopeCte()}
     SELECT ev.event_id, ev.event_type, ev.payment_id, e.id AS endpoint_id
       FROM webhook_events ev
       JOIN scope s ON s.id = ev.payment_id
       JOIN webhook_endpoints e ON e.merchant_id = ev.merchant_id
      WHERE ev.created_at > e.created_at + ${MARGIN}
        AND (e.disabled_at IS NULL OR ev.created_at < e.disabled_at - ${MARGIN})
        AND ('*' = ANY (e.enabled_events) OR ev.event_type = ANY (e.enabled_events))
        AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d
                         WHERE d.endpoint_id = e.id AND d.event_id = ev.event_id)`,
    params,
  );
  // Results whose event must be stored: the merchant had an endpoint (in any state) before the
  // payment or refund was created, and the event is not past its retention.
  const results = await db.query<ResultFact>(
    `WITH ${scopeCte()}
     SELECT s.id AS payment_id, NULL AS refund_id, s.status
       FROM scope s
      WHERE s.status IN ('settled', 'failed')
        AND s.created_at > now() - make_interval(secs => $${SCOPE_PARAMETER_COUNT + 1})
        AND EXISTS (SELECT 1 FROM webhook_endpoints e
                     WHERE e.merchant_id = s.merchant_id AND e.created_at < s.created_at - ${MARGIN})
     UNION ALL
     SELECT r.payment_id, r.id AS refund_id, r.status
       FROM refunds r JOIN scope s ON s.id = r.payment_id
      WHERE r.status IN ('succeeded', 'failed')
        AND r.created_at > now() - make_interval(secs => $${SCOPE_PARAMETER_COUNT + 1})
        AND EXISTS (SELECT 1 FROM webhook_endpoints e
                     WHERE e.merchant_id = s.merchant_id AND e.created_at < r.created_at - ${MARGIN})`,
    [...params, retentionSeconds],
  );
  return {
    endpointUrls: endpoints.rows.map((row) => row.url),
    events: new Set(events.rows.map((row) => row.event_id)),
    deliveries: deliveries.rows,
    missing: missing.rows,
    results: results.rows,
  };
}
