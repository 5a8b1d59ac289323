import { requestFingerprint } from '../idempotency/fingerprint.js';
import { createIdempotentCreate } from '../idempotency/idempotent-create.js';
import type { KeyLocks } from '../idempotency/key-lock.js';
import type { CreateOutcome } from '../idempotency/replay-stored-response.js';
import type { ResponseCache } from '../idempotency/response-cache.js';
import type { Merchant } from '../merchants/merchant-repository.js';
import type { Config } from '../platform/config.js';
import type { Queryable } from '../platform/db.js';
import type { Logger } from '../platform/logger.js';
import type { OutageLog } from '../platform/outage-log.js';
import { paymentDatabaseGuard } from '../http/payment-database-guard.js';
import type { CreatePaymentBody } from './payment-schemas.js';
import { insertNewPayment, type NewPaymentSettings } from './insert-payment-once.js';

export type { CreateOutcome } from '../idempotency/replay-stored-response.js';

export interface CreatePaymentDeps {
  /** Shared with the rate limiter: one Redis outage, one set of log lines. */
  redisOutage?: OutageLog;
  db: Queryable;
  cache: ResponseCache;
  locks: KeyLocks;
  logger: Logger;
  config: Pick<
    Config,
    | 'IDEMPOTENCY_KEY_TTL_SECONDS'
    | 'IDEMPOTENCY_IN_FLIGHT'
    | 'IDEMPOTENCY_WAIT_MS'
    | 'IDEMPOTENCY_RETRY_AFTER_SECONDS'
    | 'REDIS_FAILURE_MODE'
    | 'REDIS_BREAKER_COOLDOWN_MS'
    | 'OUTAGE_LOG_INTERVAL_MS'
    | 'UNAVAILABLE_RETRY_AFTER_SECONDS'
    | 'KAFKA_TOPIC_PAYMENTS'
  >;
  /** Where Postgres outages are logged; a database step that succeeds ends one. */
  postgresOutage?: OutageLog;
  /** Fault injection for tests: runs after the lock is taken, before the database write. */
  beforeWrite?: () => Promise<void>;
  now?: () => Date;
  sleep?: (ms: number) => Promise<void>;
}

/**
 * POST /payments, exactly once per (merchant, Idempotency-Key): the generic idempotency
 * contract (src/idempotency/idempotent-create.ts) around this endpoint's fingerprint and its
 * one-statement insert of record + payment + `payment.created` outbox row. Refusals are domain
 * errors; the HTTP layer maps them to problem+json.
 */
export function createPaymentService(deps: CreatePaymentDeps) {
  const database = paymentDatabaseGuard(
    deps.config.UNAVAILABLE_RETRY_AFTER_SECONDS,
    deps.postgresOutage,
  );
  const createOnce = createIdempotentCreate({ ...deps, database });
  const write: NewPaymentSettings = {
    db: deps.db,
    now: deps.now ?? (() => new Date()),
    keyTtlSeconds: deps.config.IDEMPOTENCY_KEY_TTL_SECONDS,
    paymentsTopic: deps.config.KAFKA_TOPIC_PAYMENTS,
  };

  return function createPayment(
    merchant: Merchant,
    key: string,
    body: CreatePaymentBody,
  ): Promise<CreateOutcome> {
    const fingerprint = requestFingerprint('POST', '/payments', fingerprinted(body));
    return createOnce(merchant.id, key, fingerprint, () =>
      insertNewPayment(write, merchant, key, body, fingerprint),
    );
  };
}

export type CreatePayment = ReturnType<typeof createPaymentService>;

/**
 * The body as fingerprinted. `metadata` defaults to {} in validation, so a request without it and
 * one with `metadata: {}` are the same request; the empty object is left out here, which keeps the
 * fingerprints stored before that default existed (bodies without metadata) matching.
 */
function fingerprinted(
  body: CreatePaymentBody,
): CreatePaymentBody | Omit<CreatePaymentBody, 'metadata'> {
  if (Object.keys(body.metadata).length > 0) return body;
  const { metadata: _empty, ...rest } = body;
  return rest;
}
