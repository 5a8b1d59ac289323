import { v7 as uuidv7 } from 'uuid';
import { requestFingerprint } from '../idempotency/fingerprint.js';
import {
  createIdempotentCreate,
  type IdempotencySettings,
  type IdempotentCreateDeps,
} from '../idempotency/idempotent-create.js';
import type { CreateOutcome } from '../idempotency/replay-stored-response.js';
import type { Merchant } from '../merchants/merchant-repository.js';
import { createDatabaseGuard } from '../idempotency/database-guard.js';
import type { Config } from '../platform/config/config.js';
import type { Pool } from '../platform/database/db.js';
import { createKeyedQueue } from '../platform/resilience/keyed-queue.js';
import { insertRefundOnce } from './insert-refund-once.js';
import type { CreateRefundBody } from './refund-schemas.js';

/** The idempotency layer's dependencies (its database guard is built here) and the refund's. */
export interface CreateRefundDeps extends Omit<IdempotentCreateDeps, 'database' | 'config' | 'db'> {
  pool: Pool;
  config: IdempotencySettings &
    Pick<Config, 'IDEMPOTENCY_KEY_TTL_SECONDS' | 'KAFKA_TOPIC_PAYMENTS'>;
  now?: () => Date;
}

/**
 * POST /payments/{id}/refunds, exactly once per (merchant, Idempotency-Key), through the same
 * idempotency layer as POST /payments: only the fingerprint (its path names the payment) and
 * the one-transaction insert (insert-refund-once.ts, where the money invariant lives) differ.
 * Keys share the merchant's key space with POST /payments; reusing one across endpoints is 422.
 */
export function createRefundService(deps: CreateRefundDeps) {
  const database = createDatabaseGuard(deps.config.UNAVAILABLE_RETRY_AFTER_SECONDS);
  const createOnce = createIdempotentCreate({ ...deps, db: deps.pool, database });
  const now = deps.now ?? (() => new Date());
  // Refunds of one payment wait for each other on its row lock (insert-refund-once), each
  // holding a pool connection while it waits. Queued here first, a burst of refunds for one
  // payment holds one connection of this process, not the whole pool, so payments and other
  // refunds keep theirs. The row lock still serializes replicas. A refund whose request has
  // ended (`signal`: its deadline answered 503, or the client left) before its turn is dropped
  // instead of written for nobody: the client's retry with the key writes it once, and the
  // queue never holds more than the requests in flight.
  const perPayment = createKeyedQueue();

  return function createRefund(
    merchant: Merchant,
    key: string,
    paymentId: string,
    body: CreateRefundBody,
    signal?: AbortSignal,
    /** The raw cache entry the merchant gate read with the rate limit (PeekedLocals), if any. */
    peeked?: string | null,
  ): Promise<CreateOutcome> {
    const fingerprint = requestFingerprint('POST', `/payments/${paymentId}/refunds`, body);
    return createOnce(
      merchant.id,
      key,
      fingerprint,
      () =>
        perPayment.run(
          paymentId,
          () =>
            insertRefundOnce(deps.pool, {
              merchantId: merchant.id,
              idempotencyKey: key,
              fingerprint,
              ttlSeconds: deps.config.IDEMPOTENCY_KEY_TTL_SECONDS,
              paymentId,
              refundId: uuidv7(),
              amount: body.amount ?? null,
              reason: body.reason ?? null,
              metadata: body.metadata ?? {},
              createdAt: now(),
              topic: deps.config.KAFKA_TOPIC_PAYMENTS,
            }),
          signal,
        ),
      peeked,
    );
  };
}

export type CreateRefund = ReturnType<typeof createRefundService>;
