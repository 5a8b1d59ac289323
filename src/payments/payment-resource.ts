import type { CreatePaymentBody, PaymentResource } from './payment-schemas.js';

export { PAYMENT_RESOURCE_COLUMNS } from './payment-columns.js';

/** A payments row as the repository reads it. */
export interface PaymentRow {
  id: string;
  amount: string | number;
  currency: string;
  source: string;
  description: string | null;
  metadata: Record<string, string>;
  status: PaymentResource['status'];
  failure_code: string | null;
  /** Read by GET and list; absent where a query does not select it. */
  amount_refunded?: string | number;
  /** The two-phase columns (issue 40); absent where a query does not select them. */
  capture_method?: string;
  amount_captured?: string | number | null;
  capture_before?: Date | null;
  canceled_at?: Date | null;
  cancellation_reason?: string | null;
  created_at: Date;
}

/** The API representation of a new payment, in the brief's field order. */
export function newPaymentResource(
  id: string,
  body: CreatePaymentBody,
  createdAt: Date,
): PaymentResource {
  return {
    id,
    object: 'payment',
    amount: body.amount,
    currency: body.currency,
    status: 'pending',
    source: body.source,
    description: body.description ?? null,
    metadata: body.metadata,
    // A manual payment says so from its first answer; an automatic one is as before issue 40.
    ...(body.capture_method === 'manual'
      ? { capture_method: 'manual' as const, amount_capturable: 0 }
      : {}),
    created_at: createdAt.toISOString(),
  };
}

/**
 * The API representation of a stored payment; `failure_code` only when it failed, the two-phase
 * fields only on a manual payment (an automatic one reads exactly as before issue 40).
 */
export function toPaymentResource(row: PaymentRow): PaymentResource {
  const manual = row.capture_method === 'manual';
  // A manual payment's refunds are against what was captured (DESIGN 133).
  const refundable =
    manual && row.amount_captured != null ? Number(row.amount_captured) : Number(row.amount);
  return {
    id: row.id,
    object: 'payment',
    amount: Number(row.amount),
    currency: row.currency as PaymentResource['currency'],
    status: row.status,
    source: row.source as PaymentResource['source'],
    description: row.description,
    metadata: row.metadata,
    ...(row.failure_code === null ? {} : { failure_code: row.failure_code }),
    ...(row.amount_refunded === undefined
      ? {}
      : {
          amount_refunded: Number(row.amount_refunded),
          refunded: Number(row.amount_refunded) === refundable,
        }),
    ...(manual ? manualFields(row) : {}),
    created_at: row.created_at.toISOString(),
  };
}

/** What a manual payment adds: its capture method, hold, capture and cancellation. */
function manualFields(row: PaymentRow): Partial<PaymentResource> {
  return {
    capture_method: 'manual',
    amount_capturable: row.status === 'requires_capture' ? Number(row.amount) : 0,
    ...(row.capture_before ? { capture_before: row.capture_before.toISOString() } : {}),
    ...(row.amount_captured == null ? {} : { amount_captured: Number(row.amount_captured) }),
    ...(row.canceled_at
      ? {
          canceled_at: row.canceled_at.toISOString(),
          cancellation_reason: (row.cancellation_reason ??
            null) as PaymentResource['cancellation_reason'],
        }
      : {}),
  };
}
