import type { Queryable } from '../platform/database/db.js';
import { REFUND_COLUMNS, type RefundRow } from './refund-resource.js';

/** A merchant's refund, or null: another merchant's refund is indistinguishable from none. */
export async function findRefund(
  db: Queryable,
  merchantId: string,
  refundId: string,
): Promise<RefundRow | null> {
  const { rows } = await db.query<RefundRow>(
    `SELECT ${REFUND_COLUMNS} FROM refunds WHERE id = $1 AND merchant_id = $2`,
    [refundId, merchantId],
  );
  return rows[0] ?? null;
}

export type RefundListResult =
  | { kind: 'page'; rows: RefundRow[]; hasMore: boolean }
  | { kind: 'unknown_payment' }
  | { kind: 'unknown_cursor' };

/** A payment's refunds, newest first, keyset on (created_at, id) like GET /payments. */
export async function listRefunds(
  db: Queryable,
  merchantId: string,
  paymentId: string,
  limit: number,
  startingAfter?: string,
): Promise<RefundListResult> {
  const payment = await db.query('SELECT 1 FROM payments WHERE id = $1 AND merchant_id = $2', [
    paymentId,
    merchantId,
  ]);
  if (payment.rowCount === 0) return { kind: 'unknown_payment' };
  let cursor: { created_at: Date | string; id: string } = {
    created_at: 'infinity',
    id: 'ffffffff-ffff-ffff-ffff-ffffffffffff',
  };
  if (startingAfter !== undefined) {
    const found = await db.query<{ created_at: Date; id: string }>(
      'SELECT created_at, id FROM refunds WHERE id = $1 AND payment_id = $2 AND merchant_id = $3',
      [startingAfter, paymentId, merchantId],
    );
    if (!found.rows[0]) return { kind: 'unknown_cursor' };
    cursor = found.rows[0];
  }
  const { rows } = await db.query<RefundRow>(
    `SELECT ${REFUND_COLUMNS} FROM refunds
      WHERE payment_id = $1 AND merchant_id = $2 AND (created_at, id) < ($3::timestamptz, $4::uuid)
      ORDER BY created_at DESC, id DESC LIMIT $5`,
    [paymentId, merchantId, cursor.created_at, cursor.id, limit + 1],
  );
  return { kind: 'page', rows: rows.slice(0, limit), hasMore: rows.length > limit };
}
