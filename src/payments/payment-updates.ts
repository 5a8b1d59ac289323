import type { Queryable } from '../platform/database/db.js';
import { PAYMENT_RESOURCE_COLUMNS } from './payment-columns.js';

/**
 * Every change of a stored payment, as the parts other components compose into their own
 * statements and transactions: settlement's intake (pending -> processing) and completion
 * (processing -> settled | failed); a refund's lock on its payment, and the reservation and
 * release of `amount_refunded`. The payment's insert is insert-payment-once.ts. Nothing outside
 * src/payments/ writes the `payments` table; each caller keeps its statement count and
 * transaction boundary.
 */

/**
 * pending -> processing, only if still pending (settlement's intake, in its batch transaction on
 * `db`); returns the payments it moved.
 */
export async function moveToProcessing(
  db: Queryable,
  paymentIds: readonly string[],
): Promise<Set<string>> {
  if (paymentIds.length === 0) return new Set();
  const { rows } = await db.query<{ id: string }>({
    name: 'payments.move-to-processing',
    text: `UPDATE payments SET status = 'processing', updated_at = now()
            WHERE id = ANY($1::uuid[]) AND status = 'pending'
           RETURNING id`,
    values: [[...new Set(paymentIds)]],
  });
  return new Set(rows.map((row) => row.id));
}

/** SQL expressions of paymentCompletionCte: arrays of one element per payment, and the time. */
export interface PaymentCompletionSql {
  ids: string;
  statuses: string;
  failureCodes: string;
  at: string;
  /** Seconds a manual payment's authorization lasts: capture_before = at + this (issue 40). */
  authorizationWindow: string;
}

/**
 * `name AS (UPDATE payments ... RETURNING <the payment's columns>)`: processing -> settled |
 * failed | requires_capture (a manual payment authorized: capture_before set) where still
 * processing, for the payments that are also in `fence` (an earlier CTE of
 * the caller's statement, e.g. the settlement jobs its claim still owns, joined on `fence.id`).
 * Returns the moved rows as toPaymentResource reads them, with their merchant_id.
 */
export function paymentCompletionCte(
  name: string,
  values: PaymentCompletionSql,
  fence: { from: string; id: string },
): string {
  return `${name} AS (
               UPDATE payments p
                  SET status = d.status, failure_code = d.failure_code, updated_at = ${values.at},
                      capture_before = CASE WHEN d.status = 'requires_capture'
                        THEN ${values.at}::timestamptz
                             + make_interval(secs => ${values.authorizationWindow}::double precision)
                        END
                 FROM unnest(${values.ids}::uuid[], ${values.statuses}::text[],
                             ${values.failureCodes}::text[]) AS d(id, status, failure_code),
                      ${fence.from}
                WHERE p.id = d.id AND ${fence.from}.${fence.id} = d.id AND p.status = 'processing'
               RETURNING ${PAYMENT_RESOURCE_COLUMNS}, p.merchant_id)`;
}

/** A payment as a refund's create checks it under its row lock. */
export interface PaymentForRefund {
  amount: string;
  /** A manual payment's capture (issue 40): refunds are against it, not the authorization. */
  amount_captured: string | null;
  amount_refunded: string;
  currency: string;
  status: string;
}

/**
 * The merchant's payment, locked FOR UPDATE in the caller's transaction (refunds of one payment
 * are serialized on it until refundReservationCte raised `amount_refunded`); null when the
 * merchant has no such payment.
 */
export async function lockPaymentForRefund(
  db: Queryable,
  paymentId: string,
  merchantId: string,
): Promise<PaymentForRefund | null> {
  const { rows } = await db.query<PaymentForRefund>(
    `SELECT amount, amount_captured, amount_refunded, currency, status FROM payments
      WHERE id = $1 AND merchant_id = $2 FOR UPDATE`,
    [paymentId, merchantId],
  );
  return rows[0] ?? null;
}

/** SQL expressions of refundReservationCte. */
export interface RefundReservationSql {
  paymentId: string;
  amount: string;
  at: string;
}

/**
 * `name AS (UPDATE payments SET amount_refunded = amount_refunded + amount ... RETURNING id)`:
 * a new refund's amount reserved on its payment, in the refund's one statement (the caller
 * holds the payment's row lock and checked the remaining amount; the CHECK
 * payments_refund_within_amount is the hard guard).
 */
export function refundReservationCte(name: string, values: RefundReservationSql): string {
  return `${name} AS (
    UPDATE payments SET amount_refunded = amount_refunded + ${values.amount},
                        updated_at = ${values.at}::timestamptz
     WHERE id = ${values.paymentId}
    RETURNING id
  )`;
}

/** A failed refund's amount released on its payment, in the refund's completion transaction. */
export async function releaseRefundedAmount(
  db: Queryable,
  paymentId: string,
  amount: string | number,
  at: Date,
): Promise<void> {
  await db.query(
    `UPDATE payments SET amount_refunded = amount_refunded - $2, updated_at = $3
      WHERE id = $1`,
    [paymentId, amount, at],
  );
}
