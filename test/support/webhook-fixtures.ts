import { randomBytes, randomUUID } from 'node:crypto';
import type { Pool } from 'pg';
import { Webhook } from 'standardwebhooks';
import {
  createWebhookDeliveryWorker,
  type WebhookDeliveryWorker,
} from '../../src/webhooks/webhook-delivery-worker.js';
import { createLogger, type Logger } from '../../src/platform/telemetry/logger.js';
import { testConfig, type TestDatabase } from './isolation.js';
import type { ReceivedWebhook } from './webhook-test-receiver.js';

/**
 * Webhook rows for the delivery tests, written as the owner (what the fan-out and the API write
 * in production), and the delivery worker on the payments_webhooks login.
 */

export const newSecret = () => `whsec_${randomBytes(32).toString('base64')}`;

export async function insertMerchant(pool: Pool): Promise<string> {
  const id = randomUUID();
  await pool.query(`INSERT INTO merchants (id, name) VALUES ($1, 'Webhook merchant')`, [id]);
  return id;
}

export interface TestEndpoint {
  id: string;
  secret: string;
}

/** An enabled endpoint with one current secret (plus `expiring` ones: [secret, expires in s]). */
export async function insertEndpoint(
  pool: Pool,
  merchantId: string,
  url: string,
  expiring: [secret: string, expiresInSeconds: number][] = [],
): Promise<TestEndpoint> {
  const id = randomUUID();
  const secret = newSecret();
  await pool.query(
    `INSERT INTO webhook_endpoints (id, merchant_id, url, enabled_events, created_at, updated_at)
     VALUES ($1, $2, $3, '{*}', now(), now())`,
    [id, merchantId, url],
  );
  await pool.query(
    `INSERT INTO webhook_endpoint_secrets (endpoint_id, secret, created_at) VALUES ($1, $2, now())`,
    [id, secret],
  );
  for (const [old, expiresIn] of expiring) {
    await pool.query(
      `INSERT INTO webhook_endpoint_secrets (endpoint_id, secret, created_at, expires_at)
       VALUES ($1, $2, now() - interval '1 day', now() + make_interval(secs => $3))`,
      [id, old, expiresIn],
    );
  }
  return { id, secret };
}

export interface QueuedEvent {
  eventId: string;
  body: string;
  /** The delivery id per endpoint id. */
  deliveries: Map<string, string>;
}

/** One result event and a delivery (with its job) to each endpoint, as the fan-out writes them. */
export async function queueEvent(
  pool: Pool,
  merchantId: string,
  paymentId: string,
  type: string,
  endpointIds: readonly string[],
): Promise<QueuedEvent> {
  const eventId = randomUUID();
  const body = JSON.stringify({
    specversion: '1.0',
    id: eventId,
    type,
    source: '/payments',
    data: { id: paymentId },
  });
  await pool.query(
    `INSERT INTO webhook_events (event_id, merchant_id, payment_id, event_type, body, created_at)
     VALUES ($1, $2, $3, $4, $5, now())`,
    [eventId, merchantId, paymentId, type, body],
  );
  const deliveries = new Map<string, string>();
  for (const endpointId of endpointIds) {
    const { rows } = await pool.query<{ id: string }>(
      `WITH d AS (INSERT INTO webhook_deliveries (endpoint_id, event_id, payment_id)
                  VALUES ($1, $2, $3) RETURNING id, seq)
       INSERT INTO webhook_delivery_jobs (delivery_id, endpoint_id, payment_id, seq)
       SELECT d.id, $1, $3, d.seq FROM d RETURNING delivery_id AS id`,
      [endpointId, eventId, paymentId],
    );
    deliveries.set(endpointId, rows[0]?.id ?? '');
  }
  return { eventId, body, deliveries };
}

export interface DeliveryState {
  status: string;
  attempts: number;
  failed_reason: string | null;
  last_status_code: number | null;
  last_error: string | null;
  job: boolean;
}

export async function deliveryState(pool: Pool, deliveryId: string): Promise<DeliveryState> {
  const { rows } = await pool.query<DeliveryState>(
    `SELECT status, attempts, failed_reason, last_status_code, last_error,
            EXISTS (SELECT 1 FROM webhook_delivery_jobs j WHERE j.delivery_id = d.id) AS job
       FROM webhook_deliveries d WHERE id = $1`,
    [deliveryId],
  );
  const [row] = rows;
  if (!row) throw new Error(`no delivery ${deliveryId}`);
  return row;
}

export async function endpointState(pool: Pool, endpointId: string) {
  const { rows } = await pool.query<{
    disabled_reason: string | null;
    disabled_at: Date | null;
    failing_since: Date | null;
  }>(`SELECT disabled_reason, disabled_at, failing_since FROM webhook_endpoints WHERE id = $1`, [
    endpointId,
  ]);
  return rows[0];
}

export async function attemptRows(pool: Pool, deliveryId: string) {
  const { rows } = await pool.query<{ status_code: number | null; error: string | null }>(
    `SELECT status_code, error FROM webhook_delivery_attempts WHERE delivery_id = $1 ORDER BY id`,
    [deliveryId],
  );
  return rows;
}

/** Verifies a received webhook with `secret` as a merchant would; returns the parsed body. */
export function verifyReceived(secret: string, request: ReceivedWebhook): unknown {
  const headers = Object.fromEntries(
    ['webhook-id', 'webhook-timestamp', 'webhook-signature'].map((name) => [
      name,
      String(request.headers[name]),
    ]),
  );
  return new Webhook(secret).verify(request.body, headers);
}

/** The delivery worker on the webhooks login, loopback allowed, a tiny retry schedule. */
export function startTestDelivery(
  db: TestDatabase,
  overrides: Record<string, string> = {},
  logger?: Logger,
): WebhookDeliveryWorker {
  const config = testConfig({
    DATABASE_URL: db.roleUrl('webhooks'),
    WEBHOOK_ALLOWED_NETWORKS: '127.0.0.0/8,::1/128',
    WEBHOOK_RETRY_SCHEDULE: '50ms,100ms,150ms',
    WEBHOOK_TIMEOUT_MS: '2000',
    WEBHOOK_POLL_MS: '50',
    ...overrides,
  });
  const delivery = createWebhookDeliveryWorker({
    pool: db.login('webhooks'),
    logger: logger ?? createLogger(config),
    config,
  });
  delivery.start();
  return delivery;
}
