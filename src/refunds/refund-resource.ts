import type { RefundResource } from './refund-schemas.js';

/** A refunds row as the repository reads it. */
export interface RefundRow {
  id: string;
  payment_id: string;
  amount: string | number;
  currency: string;
  reason: RefundResource['reason'];
  metadata: Record<string, string>;
  status: RefundResource['status'];
  failure_code: string | null;
  created_at: Date;
}

export const REFUND_COLUMNS =
  'id, payment_id, amount, currency, reason, metadata, status, failure_code, created_at';

/** The API representation of a refund; `failure_code` only when it failed. */
export function toRefundResource(row: RefundRow): RefundResource {
  return {
    id: row.id,
    object: 'refund',
    payment_id: row.payment_id,
    amount: Number(row.amount),
    currency: row.currency as RefundResource['currency'],
    status: row.status,
    reason: row.reason,
    metadata: row.metadata,
    ...(row.failure_code === null ? {} : { failure_code: row.failure_code }),
    created_at: row.created_at.toISOString(),
  };
}
