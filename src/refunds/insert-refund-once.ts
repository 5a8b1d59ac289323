import { keyRecordExists, keyRecordInsertCte } from '../idempotency/idempotency-repository.js';
import type { StoredResponse } from '../idempotency/stored-response.js';
import { outboxInsertCte } from '../outbox/outbox-writer.js';
import { refundEventId } from './refund-event-id.js';
import { lockPaymentForRefund, refundReservationCte } from '../payments/payment-updates.js';
import { currentTraceContext } from '../outbox/trace-context.js';
import { withTransaction, type Pool } from '../platform/database/db.js';
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

/**
 * The refund's writes once its payment is locked and the amount checked, as data-modifying CTEs
 * of one statement: the payment's `amount_refunded` (payments' part), the refund, its
 * idempotency record (idempotency's part), its durable job and its `refund.created` outbox row
 * (the outbox writer's part; both with the request's trace context), keyed by the PAYMENT id so
 * a payment's events stay in order on one partition. Foreign keys between them are checked at
 * the statement's end.
 */
const WRITE_REFUND_SQL = `
  WITH ${refundReservationCte('paid', { paymentId: '$1', amount: '$2', at: '$3' })}, refund AS (
    INSERT INTO refunds (id, payment_id, merchant_id, amount, currency, reason, metadata,
                         status, created_at, updated_at)
    VALUES ($4, $1, $5, $2, $6, $7, $8, 'pending', $3::timestamptz, $3::timestamptz)
    RETURNING id
  ), ${keyRecordInsertCte(
    'record',
    {
      merchantId: '$5',
      key: '$9',
      fingerprint: '$10',
      paymentId: '$1',
      refundId: '$4',
      status: '202',
      body: '$11::text',
      createdAt: '$3::timestamptz',
      ttlSeconds: '$12',
    },
    { ifKeyFree: false },
  )}, job AS (
    INSERT INTO refund_jobs (refund_id, traceparent, tracestate) VALUES ($4, $15, $16)
    RETURNING refund_id
  ), ${outboxInsertCte('event', {
    merchantId: '$5',
    eventId: '$13',
    type: "'refund.created'",
    aggregateId: '$1',
    topic: '$14',
    data: '$11::jsonb',
    createdAt: '$3::timestamptz',
    traceparent: '$15',
    tracestate: '$16',
  })}
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
      const row = await lockPaymentForRefund(client, refund.paymentId, refund.merchantId);
      // The key first: a key already used (replay, other body, other endpoint) is answered from
      // its record, whatever the payment's state is now.
      if (await keyRecordExists(client, refund.merchantId, refund.idempotencyKey)) return null;
      if (!row) throw new RefundPaymentNotFound(refund.paymentId);
      if (row.status !== 'settled') throw new PaymentNotRefundable(row.status);
      // A manual payment's refunds are against what was captured, never the authorization.
      const paid = row.amount_captured === null ? row.amount : row.amount_captured;
      const remaining = Number(paid) - Number(row.amount_refunded);
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
    if (
      violated(error, '23514', 'payments_refund_within_amount') ||
      violated(error, '23514', 'payments_refund_within_captured')
    ) {
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
