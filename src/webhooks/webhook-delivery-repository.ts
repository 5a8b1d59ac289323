import { withTransaction, type Pool, type Queryable } from '../platform/database/db.js';
import { DELIVERY_COLUMNS, DELIVERY_FROM, type DeliveryRow } from './webhook-resource.js';

/** What a merchant reads and does with an endpoint's deliveries: list, get, retry. */

/** Whether the merchant owns the endpoint (another merchant's is indistinguishable from none). */
async function ownsEndpoint(db: Queryable, merchantId: string, endpointId: string) {
  const { rowCount } = await db.query(
    'SELECT 1 FROM webhook_endpoints WHERE id = $1 AND merchant_id = $2',
    [endpointId, merchantId],
  );
  return rowCount !== 0;
}

export type DeliveryPage =
  | { kind: 'page'; rows: DeliveryRow[]; hasMore: boolean }
  | { kind: 'unknown_endpoint' }
  | { kind: 'unknown_cursor' };

/** Newest first, keyset on (created_at, id), optionally one status; limit + 1 for has_more. */
export async function listDeliveries(
  db: Queryable,
  merchantId: string,
  endpointId: string,
  query: { limit: number; startingAfter?: string; status?: string },
): Promise<DeliveryPage> {
  if (!(await ownsEndpoint(db, merchantId, endpointId))) return { kind: 'unknown_endpoint' };
  if (query.startingAfter !== undefined) {
    const { rowCount } = await db.query(
      'SELECT 1 FROM webhook_deliveries WHERE id = $1 AND endpoint_id = $2',
      [query.startingAfter, endpointId],
    );
    if (rowCount === 0) return { kind: 'unknown_cursor' };
  }
  // The cursor's created_at is read in SQL: it has microseconds, which a JS Date would drop.
  const { rows } = await db.query<DeliveryRow>(
    `SELECT ${DELIVERY_COLUMNS} FROM ${DELIVERY_FROM}
      WHERE d.endpoint_id = $1
        AND ($2::text IS NULL OR d.status = $2)
        AND ($3::uuid IS NULL
             OR (d.created_at, d.id) < (SELECT created_at, id FROM webhook_deliveries WHERE id = $3))
      ORDER BY d.created_at DESC, d.id DESC LIMIT $4`,
    [endpointId, query.status ?? null, query.startingAfter ?? null, query.limit + 1],
  );
  return { kind: 'page', rows: rows.slice(0, query.limit), hasMore: rows.length > query.limit };
}

export interface AttemptRow {
  started_at: Date;
  status_code: number | null;
  latency_ms: number;
  error: string | null;
}

/** A delivery of the merchant's endpoint, with its attempts oldest first; null if none. */
export async function findDelivery(
  db: Queryable,
  merchantId: string,
  endpointId: string,
  deliveryId: string,
): Promise<{ delivery: DeliveryRow; attempts: AttemptRow[] } | null> {
  const { rows } = await db.query<DeliveryRow>(
    `SELECT ${DELIVERY_COLUMNS} FROM ${DELIVERY_FROM}
      JOIN webhook_endpoints w ON w.id = d.endpoint_id
      WHERE d.id = $1 AND d.endpoint_id = $2 AND w.merchant_id = $3`,
    [deliveryId, endpointId, merchantId],
  );
  const delivery = rows[0];
  if (!delivery) return null;
  const attempts = await db.query<AttemptRow>(
    `SELECT started_at, status_code, latency_ms, error FROM webhook_delivery_attempts
      WHERE delivery_id = $1 ORDER BY id`,
    [deliveryId],
  );
  return { delivery, attempts: attempts.rows };
}

export type RetryResult = { kind: 'queued' } | { kind: 'not_found' } | { kind: 'disabled' };

/**
 * The delivery becomes pending again with a job due now: the job is inserted if it is gone
 * (delivered or given up), or an existing pending job is made due now (its attempts kept, so
 * the retry schedule goes on where it was). The endpoint's row is locked (FOR SHARE) so it is
 * not disabled between the check and the write.
 */
export async function retryDelivery(
  pool: Pool,
  merchantId: string,
  endpointId: string,
  deliveryId: string,
): Promise<RetryResult> {
  return withTransaction(pool, async (client) => {
    const { rows: endpoints } = await client.query<{ disabled: boolean }>(
      `SELECT disabled_at IS NOT NULL AS disabled FROM webhook_endpoints
        WHERE id = $1 AND merchant_id = $2 FOR SHARE`,
      [endpointId, merchantId],
    );
    const endpoint = endpoints[0];
    if (!endpoint) return { kind: 'not_found' };
    if (endpoint.disabled) return { kind: 'disabled' };
    const { rowCount } = await client.query(
      `WITH delivery AS (
         UPDATE webhook_deliveries
            SET status = 'pending', failed_reason = NULL, updated_at = now()
          WHERE id = $1 AND endpoint_id = $2
          RETURNING id, endpoint_id, payment_id, seq
       )
       INSERT INTO webhook_delivery_jobs (delivery_id, endpoint_id, payment_id, seq, next_attempt_at)
       SELECT id, endpoint_id, payment_id, seq, now() FROM delivery
       ON CONFLICT (delivery_id) DO UPDATE SET next_attempt_at = now()
        WHERE webhook_delivery_jobs.state = 'pending'
       RETURNING delivery_id`,
      [deliveryId, endpointId],
    );
    if (rowCount !== 0) return { kind: 'queued' };
    // Either no such delivery, or its job is dead (not a state webhook jobs reach).
    const { rowCount: exists } = await client.query(
      'SELECT 1 FROM webhook_deliveries WHERE id = $1 AND endpoint_id = $2',
      [deliveryId, endpointId],
    );
    return exists === 0 ? { kind: 'not_found' } : { kind: 'queued' };
  });
}
