import { createDatabaseGuard } from '../idempotency/database-guard.js';
import { requestFingerprint } from '../idempotency/fingerprint.js';
import {
  createIdempotentCreate,
  type IdempotencySettings,
  type IdempotentCreateDeps,
} from '../idempotency/idempotent-create.js';
import type { CreateOutcome } from '../idempotency/replay-stored-response.js';
import type { Merchant } from '../merchants/merchant-repository.js';
import type { Config } from '../platform/config/config.js';
import type { Pool } from '../platform/database/db.js';
import { createKeyedQueue } from '../platform/resilience/keyed-queue.js';
import { decideHold, type HoldDecision } from './payment-hold-updates.js';
import type { CancelPaymentBody, CapturePaymentBody } from './payment-schemas.js';

/** The idempotency layer's dependencies (its database guard is built here) and the pool. */
export interface HoldPaymentDeps extends Omit<IdempotentCreateDeps, 'database' | 'config' | 'db'> {
  pool: Pool;
  config: IdempotencySettings & Pick<Config, 'IDEMPOTENCY_KEY_TTL_SECONDS'>;
  now?: () => Date;
}

/** One of the two: answers 202 with the payment, or throws the contract's refusal. */
export type DecideOnHold<B> = (
  merchant: Merchant,
  key: string,
  paymentId: string,
  body: B,
  signal?: AbortSignal,
  peeked?: string | null,
) => Promise<CreateOutcome>;

export interface HoldPayments {
  capture: DecideOnHold<CapturePaymentBody>;
  cancel: DecideOnHold<CancelPaymentBody>;
}

/**
 * POST /payments/{id}/capture and /cancel (issue 40), exactly once per (merchant,
 * Idempotency-Key), through the same idempotency layer as refunds: the fingerprint names the
 * path, and the write is the decision under the payment's row lock (decideHold). Decisions on
 * one payment queue in this process (as refunds do) so a burst of them holds one pool
 * connection while the row lock serializes replicas; a request that ended before its turn is
 * dropped, its retry with the key decides once.
 */
export function createHoldPayments(deps: HoldPaymentDeps): HoldPayments {
  const database = createDatabaseGuard(deps.config.UNAVAILABLE_RETRY_AFTER_SECONDS);
  const createOnce = createIdempotentCreate({ ...deps, db: deps.pool, database });
  const now = deps.now ?? (() => new Date());
  const perPayment = createKeyedQueue();

  function decider<B>(path: 'capture' | 'cancel', decisionOf: (body: B) => HoldDecision) {
    return (
      merchant: Merchant,
      key: string,
      paymentId: string,
      body: B,
      signal?: AbortSignal,
      peeked?: string | null,
    ): Promise<CreateOutcome> => {
      const fingerprint = requestFingerprint('POST', `/payments/${paymentId}/${path}`, body);
      const decide = () =>
        decideHold(deps.pool, {
          merchantId: merchant.id,
          idempotencyKey: key,
          fingerprint,
          ttlSeconds: deps.config.IDEMPOTENCY_KEY_TTL_SECONDS,
          paymentId,
          decision: decisionOf(body),
          createdAt: now(),
        });
      return createOnce(
        merchant.id,
        key,
        fingerprint,
        () => perPayment.run(paymentId, decide, signal),
        peeked,
      );
    };
  }

  return {
    capture: decider<CapturePaymentBody>('capture', (body) => ({
      action: 'capture',
      amount: body.amount_to_capture ?? null,
    })),
    cancel: decider<CancelPaymentBody>('cancel', (body) => ({
      action: 'cancel',
      reason: body.cancellation_reason ?? null,
    })),
  };
}
