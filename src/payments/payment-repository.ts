import type { Queryable } from '../platform/database/db.js';
import type { PaymentRow } from './payment-resource.js';

const PAYMENT_COLUMNS =
  'id, amount, currency, source, description, metadata, status, failure_code, amount_refunded, capture_method, amount_captured, capture_before, canceled_at, cancellation_reason, created_at';

/** A merchant's payment, or null: another merchant's payment is indistinguishable from none. */
export async function findPayment(
  db: Queryable,
  merchantId: string,
  paymentId: string,
): Promise<PaymentRow | null> {
  const { rows } = await db.query<PaymentRow>(
    `SELECT ${PAYMENT_COLUMNS} FROM payments WHERE id = $1 AND merchant_id = $2`,
    [paymentId, merchantId],
  );
  return rows[0] ?? null;
}

export type ListResult =
  { kind: 'page'; rows: PaymentRow[]; hasMore: boolean } | { kind: 'unknown_cursor' };

/**
 * Newest first, keyset pagination on (created_at, id): stable under concurrent inserts, and
 * each page is one index range scan whatever its depth. Fetches limit + 1 to learn has_more.
 */
export async function listPayments(
  db: Queryable,
  merchantId: string,
  limit: number,
  startingAfter?: string,
): Promise<ListResult> {
  // Without a cursor, start above every possible key.
  let cursor: { created_at: Date | string; id: string } = {
    created_at: 'infinity',
    id: 'ffffffff-ffff-ffff-ffff-ffffffffffff',
  };
  if (startingAfter !== undefined) {
    const found = await db.query<{ created_at: Date; id: string }>(
      'SELECT created_at, id FROM payments WHERE id = $1 AND merchant_id = $2',
      [startingAfter, merchantId],
    );
    if (!found.rows[0]) return { kind: 'unknown_cursor' };
    cursor = found.rows[0];
  }
  const { rows } = await db.query<PaymentRow>(
    `SELECT ${PAYMENT_COLUMNS} FROM payments
      WHERE merchant_id = $1 AND (created_at, id) < ($2::timestamptz, $3::uuid)
      ORDER BY created_at DESC, id DESC LIMIT $4`,
    [merchantId, cursor.created_at, cursor.id, limit + 1],
  );
  return { kind: 'page', rows: rows.slice(0, limit), hasMore: rows.length > limit };
}
