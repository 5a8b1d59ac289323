import type { CreatePaymentBody, PaymentResource } from './payment-schemas.js';

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
    created_at: createdAt.toISOString(),
  };
}

/** The API representation of a stored payment; `failure_code` only when it failed. */
export function toPaymentResource(row: PaymentRow): PaymentResource {
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
          refunded: Number(row.amount_refunded) === Number(row.amount),
        }),
    created_at: row.created_at.toISOString(),
  };
}
