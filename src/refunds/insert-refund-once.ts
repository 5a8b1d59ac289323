import type { StoredResponse } from '../idempotency/stored-response.js';
import { refundEventId } from '../outbox/refund-event-id.js';
import { currentTraceContext } from '../outbox/trace-context.js';
import { withTransaction, type Pool } from '../platform/db.js';
import {
  PaymentNotRefundable,
  RefundExceedsPayment,
  RefundPaymentNotFound,
} from './refund-errors.js';
import type { RefundResource } from './refund-schemas.js';

export interface NewRefund {
  merchantId: string;
  idempotencyKey: string;
  fingerprint: Buffer;
  ttlSeconds: number;
  paymentId: string;
  refundId: string;
  /** Null: what is left of the payment. */
  amount: number | null;
  reason: RefundResource['reason'];
  metadata: Record<string, string>;
  createdAt: Date;
  topic: string;
}

interface PaymentForRefund {
  amount: string;
  amount_refunded: string;
  currency: string;
  status: string;
}

/**
 * The refund's writes once its payment is locked and the amount checked, as data-modifying CTEs
 * of one statement: the payment's `amount_refunded`, the refund, its idempotency record, its
 * durable job and its `refund.created` outbox row (both with the request's trace context),
 * keyed by the PAYMENT id so a payment's events
 * stay in order on one partition. Foreign keys between them are checked at the statement's end.
 */
const WRITE_REFUND_SQL = `
  WITH paid AS (
    UPDATE payments SET amount_refunded = amount_refunded + $2, updated_at = $3::timestamptz
     WHERE id = $1
    RETURNING id
  ), refund AS (
    INSERT INTO refunds (id, payment_id, merchant_id, amount, currency, reason, metadata,
                         status, created_at, updated_at)
    VALUES ($4, $1, $5, $2, $6, $7, $8, 'pending', $3::timestamptz, $3::timestamptz)
    RETURNING id
  ), record AS (
    INSERT INTO idempotency_keys (merchant_id, idempotency_key, fingerprint, payment_id,
                                  refund_id, response_status, response_body, created_at,
                                  expires_at)
    VALUES ($5, $9, $10, $1, $4, 202, $11::text, $3::timestamptz,
            $3::timestamptz + make_interval(secs => $12))
    RETURNING expires_at
  ), job AS (
    INSERT INTO refund_jobs (refund_id, traceparent, tracestate) VALUES ($4, $15, $16)
    RETURNING refund_id
  ), event AS (
    INSERT INTO outbox (event_id, event_type, aggregate_id, topic, data, created_at,
                        traceparent, tracestate)
    VALUES ($13, 'refund.created', $1, $14, $11::jsonb, $3::timestamptz, $15, $16)
    RETURNING aggregate_id
  )
  SELECT record.expires_at FROM record, paid, refund, job, event`;

/**
 * ONE transaction writes the refund, its idempotency record, its durable job and its
 * `refund.created` outbox row, or nothing. The money invariant: the payment row is locked
 * (FOR UPDATE) so concurrent refunds of one payment are serialized, the remaining amount is
 * checked under that lock, and `amount_refunded` is raised in the same transaction, where the
 * CHECK (amount_refunded <= amount) is the hard guard whatever the code does.
 *
 * Null when the key already has a record (the caller replays it); a refusal throws a domain
 * error and writes nothing.
 */
export async function insertRefundOnce(
  pool: Pool,
  refund: NewRefund,
): Promise<StoredResponse | null> {
  try {
    return await withTransaction(pool, async (client) => {
      const payment = await client.query<PaymentForRefund>(
        `SELECT amount, amount_refunded, currency, status FROM payments
          WHERE id = $1 AND merchant_id = $2 FOR UPDATE`,
        [refund.paymentId, refund.merchantId],
      );
      // The key first: a key already used (replay, other body, other endpoint) is answered from
      // its record, whatever the payment's state is now.
      const key = await client.query(
        'SELECT 1 FROM idempotency_keys WHERE merchant_id = $1 AND idempotency_key = $2',
        [refund.merchantId, refund.idempotencyKey],
      );
      if (key.rowCount !== 0) return null;
      const row = payment.rows[0];
      if (!row) throw new RefundPaymentNotFound(refund.paymentId);
      if (row.status !== 'settled') throw new PaymentNotRefundable(row.status);
      const remaining = Number(row.amount) - Number(row.amount_refunded);
      const amount = refund.amount ?? remaining;
      if (amount <= 0 || amount > remaining) {
        throw new RefundExceedsPayment(refund.amount, remaining);
      }
      const resource: RefundResource = {
        id: refund.refundId,
        object: 'refund',
        payment_id: refund.paymentId,
        amount,
        currency: row.currency as RefundResource['currency'],
        status: 'pending',
        reason: refund.reason,
        metadata: refund.metadata,
        created_at: refund.createdAt.toISOString(),
      };
      const body = JSON.stringify(resource);
      // The POST's trace, for the event and for every attempt of the refund worker.
      const trace = currentTraceContext();
      // One statement for the five writes: the payment's row lock is held for as few round
      // trips as possible (refunds of one payment queue on it).
      const { rows } = await client.query<{ expires_at: Date }>(WRITE_REFUND_SQL, [
        refund.paymentId,
        amount,
        refund.createdAt,
        refund.refundId,
        refund.merchantId,
        row.currency,
        refund.reason,
        refund.metadata,
        refund.idempotencyKey,
        refund.fingerprint,
        body,
        refund.ttlSeconds,
        refundEventId(refund.refundId, 'refund.created'),
        refund.topic,
        trace.traceparent,
        trace.tracestate,
      ]);
      const expiresAt = rows[0]?.expires_at ?? refund.createdAt;
      return {
        paymentId: refund.paymentId,
        refundId: refund.refundId,
        fingerprint: refund.fingerprint.toString('hex'),
        status: 202,
        body,
        expiresAt,
      };
    });
  } catch (error) {
    // The same key inserted concurrently for another payment (the payment lock did not
    // serialize them): the key's record is the answer.
    if (violated(error, '23505', 'idempotency_keys_pkey')) return null;
    // The hard guard fired (only reachable if the lock above were removed): still a refusal.
    if (violated(error, '23514', 'payments_refund_within_amount')) {
      throw new RefundExceedsPayment(refund.amount, 0);
    }
    throw error;
  }
}

/** Whether a pg error is this SQLSTATE on this constraint. */
function violated(error: unknown, sqlstate: string, constraint: string): boolean {
  const e = error as { code?: unknown; constraint?: unknown } | null;
  return e?.code === sqlstate && e.constraint === constraint;
}
