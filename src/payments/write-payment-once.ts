import { v7 as uuidv7 } from 'uuid';
import { insertPaymentOnce } from '../idempotency/idempotency-repository.js';
import type { StoredResponse } from '../idempotency/stored-response.js';
import type { Merchant } from '../merchants/merchant-repository.js';
import { paymentEventId } from '../outbox/event-id.js';
import type { Queryable } from '../platform/db.js';
import { newPaymentResource } from './payment-resource.js';
import type { CreatePaymentBody } from './payment-schemas.js';

export interface WritePaymentDeps {
  db: Queryable;
  now: () => Date;
  keyTtlSeconds: number;
  paymentsTopic: string;
}

/**
 * The payment's insert for the generic idempotency layer: ONE statement writes key record +
 * payment + `payment.created` outbox row if the key is free (the UNIQUE constraint is the
 * guard); null when the key already has a record.
 */
export function insertNewPayment(
  deps: WritePaymentDeps,
  merchant: Merchant,
  key: string,
  body: CreatePaymentBody,
  fingerprint: Buffer,
): Promise<StoredResponse | null> {
  const paymentId = uuidv7();
  const createdAt = deps.now();
  const resource = newPaymentResource(paymentId, body, createdAt);
  return insertPaymentOnce(deps.db, {
    merchantId: merchant.id,
    idempotencyKey: key,
    fingerprint,
    ttlSeconds: deps.keyTtlSeconds,
    response: { status: 202, body: JSON.stringify(resource) },
    payment: {
      id: paymentId,
      amount: body.amount,
      currency: body.currency,
      source: body.source,
      description: body.description ?? null,
      metadata: body.metadata,
      createdAt,
    },
    event: {
      id: paymentEventId(paymentId, 'payment.created'),
      type: 'payment.created',
      topic: deps.paymentsTopic,
      data: resource,
    },
  });
}
