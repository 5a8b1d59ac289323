import type { Queryable } from '../platform/db.js';
import type { StoredResponse } from './stored-response.js';

export interface NewPaymentRecord {
  merchantId: string;
  idempotencyKey: string;
  fingerprint: Buffer;
  ttlSeconds: number;
  response: { status: number; body: string };
  payment: {
    id: string;
    amount: number;
    currency: string;
    source: string;
    description: string | null;
    metadata: Record<string, string>;
    createdAt: Date;
  };
  event: { id: string; type: string; topic: string; data: unknown };
}

/**
 * The statement of insertPaymentOnce, exported so `npm run bench:api` gives pgbench this very
 * text (tools/bench/pgbench-script.ts) instead of a copy that could drift.
 * $1 merchant, $2 key, $3 fingerprint, $4 payment id, $5/$6 response status/body, $7 created
 * at, $8 TTL seconds, $9..$13 amount, currency, source, description, metadata, $14..$17 event
 * id, type, topic, data.
 */
export const INSERT_PAYMENT_ONCE_SQL = `WITH idempotency AS (
       INSERT INTO idempotency_keys (merchant_id, idempotency_key, fingerprint, payment_id,
                                     response_status, response_body, created_at, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $7::timestamptz + make_interval(secs => $8))
       ON CONFLICT (merchant_id, idempotency_key) DO NOTHING
       RETURNING payment_id, expires_at
     ), payment AS (
       INSERT INTO payments (id, merchant_id, amount, currency, source, description, metadata,
                             status, created_at, updated_at)
       SELECT payment_id, $1, $9, $10, $11, $12, $13, 'pending', $7, $7 FROM idempotency
       RETURNING id
     ), outbox AS (
       INSERT INTO outbox (event_id, event_type, aggregate_id, topic, data, created_at)
       SELECT $14, $15, id, $16, $17, $7 FROM payment
       RETURNING aggregate_id
     )
     SELECT idempotency.expires_at FROM idempotency JOIN outbox ON outbox.aggregate_id = idempotency.payment_id`;

/**
 * ONE statement, hence one transaction: the idempotency record, the payment and its
 * `payment.created` outbox row are written together or not at all (I2). The record goes first
 * with ON CONFLICT DO NOTHING; the payment and the outbox row are inserted only from what that
 * insert returned, so a key that exists writes nothing. A concurrent insert of the same key
 * waits for the other transaction and then sees its row (I1, whatever Redis did).
 *
 * Returns the stored response when this call created the payment, null when the key exists.
 */
export async function insertPaymentOnce(
  db: Queryable,
  record: NewPaymentRecord,
): Promise<StoredResponse | null> {
  const { payment, event } = record;
  // Named: prepared once per connection, like pgbench -M prepared.
  const { rows } = await db.query<{ expires_at: Date }>({
    name: 'idempotency.insert-payment-once',
    text: INSERT_PAYMENT_ONCE_SQL,
    values: [
      record.merchantId,
      record.idempotencyKey,
      record.fingerprint,
      payment.id,
      record.response.status,
      record.response.body,
      payment.createdAt,
      record.ttlSeconds,
      payment.amount,
      payment.currency,
      payment.source,
      payment.description,
      payment.metadata,
      event.id,
      event.type,
      event.topic,
      JSON.stringify(event.data),
    ],
  });
  const created = rows[0];
  if (!created) return null;
  return {
    paymentId: payment.id,
    fingerprint: record.fingerprint.toString('hex'),
    status: record.response.status,
    body: record.response.body,
    expiresAt: created.expires_at,
  };
}

interface KeyRow {
  payment_id: string;
  fingerprint: Buffer;
  response_status: number;
  response_body: string;
  expires_at: Date;
  expired: boolean;
}

export type FoundKey = { kind: 'live'; response: StoredResponse } | { kind: 'expired' } | null;

/** The key's record as the database sees it now (expiry judged by the database clock). */
export async function findKey(db: Queryable, merchantId: string, key: string): Promise<FoundKey> {
  const { rows } = await db.query<KeyRow>({
    name: 'idempotency.find-key',
    text: `SELECT payment_id, fingerprint, response_status, response_body, expires_at,
            expires_at <= now() AS expired
       FROM idempotency_keys WHERE merchant_id = $1 AND idempotency_key = $2`,
    values: [merchantId, key],
  });
  const row = rows[0];
  if (!row) return null;
  if (row.expired) return { kind: 'expired' };
  return {
    kind: 'live',
    response: {
      paymentId: row.payment_id,
      fingerprint: row.fingerprint.toString('hex'),
      status: row.response_status,
      body: row.response_body,
      expiresAt: row.expires_at,
    },
  };
}

/** Removes the key's record if it has expired, so the key can start a new payment. */
export async function deleteExpiredKey(db: Queryable, merchantId: string, key: string) {
  await db.query(
    `DELETE FROM idempotency_keys
      WHERE merchant_id = $1 AND idempotency_key = $2 AND expires_at <= now()`,
    [merchantId, key],
  );
}

/**
 * Deletes up to `batch` expired records, oldest first, skipping rows another reaper holds.
 * Payments are never touched: the record only points at its payment.
 */
export async function reapExpiredKeys(db: Queryable, batch: number): Promise<number> {
  const result = await db.query(
    `DELETE FROM idempotency_keys k
      USING (SELECT merchant_id, idempotency_key FROM idempotency_keys
              WHERE expires_at <= now() ORDER BY expires_at LIMIT $1
              FOR UPDATE SKIP LOCKED) expired
      WHERE k.merchant_id = expired.merchant_id AND k.idempotency_key = expired.idempotency_key`,
    [batch],
  );
  return result.rowCount ?? 0;
}
