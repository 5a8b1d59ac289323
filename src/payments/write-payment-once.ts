import { v7 as uuidv7 } from 'uuid';
import {
  deleteExpiredKey,
  findKey,
  insertPaymentOnce,
} from '../idempotency/idempotency-repository.js';
import type { StoredResponse } from '../idempotency/stored-response.js';
import type { Merchant } from '../merchants/merchant-repository.js';
import { paymentEventId } from '../outbox/event-id.js';
import type { Queryable } from '../platform/db.js';
import type { PaymentDatabaseGuard } from './payment-database-guard.js';
import { newPaymentResource } from './payment-resource.js';
import type { CreatePaymentBody } from './payment-schemas.js';

export interface WritePaymentDeps {
  db: Queryable;
  database: PaymentDatabaseGuard;
  now: () => Date;
  keyTtlSeconds: number;
  paymentsTopic: string;
}

export interface WriteResult {
  /** True when this request wrote the payment; false when the key already had a record. */
  created: boolean;
  stored: StoredResponse;
}

/**
 * One database statement writes key record + payment + outbox row if the key is free (the
 * UNIQUE constraint is the guard); otherwise the key's live record is returned.
 */
export async function writePaymentOnce(
  deps: WritePaymentDeps,
  merchant: Merchant,
  key: string,
  body: CreatePaymentBody,
  fingerprint: Buffer,
): Promise<WriteResult> {
  // Twice at most: the second pass follows the removal of an expired record.
  for (let pass = 0; pass < 2; pass++) {
    const stored = await insertOnce(deps, merchant, key, body, fingerprint);
    if (stored) return { created: true, stored };
    const existing = await deps.database(() => findKey(deps.db, merchant.id, key));
    if (existing?.kind === 'live') return { created: false, stored: existing.response };
    if (existing?.kind === 'expired') {
      await deps.database(() => deleteExpiredKey(deps.db, merchant.id, key));
    }
    // null: reaped between the two statements; either way the key is free again.
  }
  throw new Error(`idempotency key could not be claimed or read after retrying`);
}

/** The single INSERT of a new payment; null when the key already has a record. */
function insertOnce(
  deps: WritePaymentDeps,
  merchant: Merchant,
  key: string,
  body: CreatePaymentBody,
  fingerprint: Buffer,
): Promise<StoredResponse | null> {
  const paymentId = uuidv7();
  const createdAt = deps.now();
  const resource = newPaymentResource(paymentId, body, createdAt);
  return deps.database(() =>
    insertPaymentOnce(deps.db, {
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
        metadata: body.metadata ?? {},
        createdAt,
      },
      event: {
        id: paymentEventId(paymentId, 'payment.created'),
        type: 'payment.created',
        topic: deps.paymentsTopic,
        data: resource,
      },
    }),
  );
}
