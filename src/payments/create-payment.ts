import { requestFingerprint } from '../idempotency/fingerprint.js';
import {
  createIdempotentCreate,
  type IdempotencySettings,
  type IdempotentCreateDeps,
} from '../idempotency/idempotent-create.js';
import type { CreateOutcome } from '../idempotency/replay-stored-response.js';
import type { Merchant } from '../merchants/merchant-repository.js';
import type { Config } from '../platform/config/config.js';
import type { OutageLog } from '../platform/resilience/outage-log.js';
import { createDatabaseGuard } from '../idempotency/database-guard.js';
import type { CreatePaymentBody } from './payment-schemas.js';
import {
  insertNewPayment,
  insertPaymentOnce,
  type NewPaymentSettings,
} from './payment-insert-single.js';
import { createPaymentInsertBatcher } from './payment-insert-batcher.js';

export type { CreateOutcome } from '../idempotency/replay-stored-response.js';

/** The idempotency layer's dependencies (its database guard is built here) and the payment's. */
export interface CreatePaymentDeps extends Omit<IdempotentCreateDeps, 'database' | 'config'> {
  config: IdempotencySettings &
    Pick<
      Config,
      | 'IDEMPOTENCY_KEY_TTL_SECONDS'
      | 'KAFKA_TOPIC_PAYMENTS'
      | 'PAYMENT_BATCH_MAX_ROWS'
      | 'PAYMENT_BATCH_WINDOW_MS'
      | 'PAYMENT_BATCH_IN_FLIGHT'
    >;
  /** Where Postgres outages are logged; a database step that succeeds ends one. */
  postgresOutage?: OutageLog;
  now?: () => Date;
}

/**
 * POST /payments, exactly once per (merchant, Idempotency-Key). The trail from the route to the
 * commit: this endpoint's fingerprint -> idempotency's generic `createOnce` (response cache,
 * key lock, write once, replay; it knows no payment) -> the write it is handed, this folder's
 * insertPaymentOnce (insert-payment-once.ts): ONE statement of the key record (idempotency's
 * CTE part), the payment and its `payment.created` event (the outbox writer's CTE part), which
 * the batcher (payment-insert-batcher.ts) writes for many concurrent requests at once.
 * Refusals are domain errors; the HTTP layer maps them to problem+json.
 */
export function createPaymentService(deps: CreatePaymentDeps) {
  const database = createDatabaseGuard(
    deps.config.UNAVAILABLE_RETRY_AFTER_SECONDS,
    deps.postgresOutage,
  );
  const createOnce = createIdempotentCreate({ ...deps, database });
  const write: NewPaymentSettings = {
    insert: createPaymentInsertBatcher({
      db: deps.db,
      maxRows: deps.config.PAYMENT_BATCH_MAX_ROWS,
      windowMs: deps.config.PAYMENT_BATCH_WINDOW_MS,
      inFlight: deps.config.PAYMENT_BATCH_IN_FLIGHT,
    }),
    insertManual: (record) => insertPaymentOnce(deps.db, record),
    now: deps.now ?? (() => new Date()),
    keyTtlSeconds: deps.config.IDEMPOTENCY_KEY_TTL_SECONDS,
    paymentsTopic: deps.config.KAFKA_TOPIC_PAYMENTS,
  };

  return function createPayment(
    merchant: Merchant,
    key: string,
    body: CreatePaymentBody,
    peeked?: string | null,
  ): Promise<CreateOutcome> {
    const fingerprint = requestFingerprint('POST', '/payments', fingerprinted(body));
    return createOnce(
      merchant.id,
      key,
      fingerprint,
      () => insertNewPayment(write, merchant, key, body, fingerprint),
      peeked,
    );
  };
}

export type CreatePayment = ReturnType<typeof createPaymentService>;

/**
 * The body as fingerprinted. `metadata` defaults to {} in validation, so a request without it and
 * one with `metadata: {}` are the same request; the empty object is left out here, which keeps the
 * fingerprints stored before that default existed (bodies without metadata) matching.
 */
function fingerprinted(body: CreatePaymentBody): Partial<CreatePaymentBody> {
  // capture_method automatic is the default: sent or not, the same request (and the same
  // fingerprint as before issue 40 added the field).
  const { capture_method: method, ...rest } = body;
  const same = method === 'manual' ? { ...rest, capture_method: method } : rest;
  if (Object.keys(body.metadata).length > 0) return same;
  const { metadata: _empty, ...withoutMetadata } = same;
  return withoutMetadata;
}
