import { requestFingerprint } from '../idempotency/fingerprint.js';
import type { KeyLocks } from '../idempotency/key-lock.js';
import type { ResponseCache } from '../idempotency/response-cache.js';
import type { Merchant } from '../merchants/merchant-repository.js';
import type { Config } from '../platform/config.js';
import type { Queryable } from '../platform/db.js';
import type { Logger } from '../platform/logger.js';
import { acquireKeyLock } from './acquire-key-lock.js';
import { awaitInFlightTwin, type InFlightDeps } from './await-in-flight-twin.js';
import { cacheResponse } from './cache-response.js';
import { paymentDatabaseGuard } from './payment-database-guard.js';
import type { CreatePaymentBody } from './payment-schemas.js';
import { createRedisGuard } from './redis-guard.js';
import { replayStoredResponse, type CreateOutcome } from './replay-stored-response.js';
import { writePaymentOnce, type WritePaymentDeps } from './write-payment-once.js';

export type { CreateOutcome } from './replay-stored-response.js';

export interface CreatePaymentDeps {
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
    | 'UNAVAILABLE_RETRY_AFTER_SECONDS'
    | 'KAFKA_TOPIC_PAYMENTS'
  >;
  /** Fault injection for tests: runs after the lock is taken, before the database write. */
  beforeWrite?: () => Promise<void>;
  now?: () => Date;
  sleep?: (ms: number) => Promise<void>;
}

/** The steps' dependencies, built once per service from its deps and configuration. */
function buildSteps(deps: CreatePaymentDeps) {
  const { config, logger } = deps;
  const redis = createRedisGuard({
    failClosed: config.REDIS_FAILURE_MODE === 'closed',
    retryAfterSeconds: config.UNAVAILABLE_RETRY_AFTER_SECONDS,
    logger,
  });
  const database = paymentDatabaseGuard(config.UNAVAILABLE_RETRY_AFTER_SECONDS);
  const write: WritePaymentDeps = {
    db: deps.db,
    database,
    now: deps.now ?? (() => new Date()),
    keyTtlSeconds: config.IDEMPOTENCY_KEY_TTL_SECONDS,
    paymentsTopic: config.KAFKA_TOPIC_PAYMENTS,
  };
  const inFlight: InFlightDeps = {
    db: deps.db,
    cache: deps.cache,
    redis,
    database,
    sleep: deps.sleep ?? ((ms: number) => new Promise((r) => setTimeout(r, ms))),
    waitMs: config.IDEMPOTENCY_IN_FLIGHT === 'wait' ? config.IDEMPOTENCY_WAIT_MS : 0,
    retryAfterSeconds: config.IDEMPOTENCY_RETRY_AFTER_SECONDS,
  };
  return { redis, write, inFlight };
}

/**
 * POST /payments, exactly once per (merchant, Idempotency-Key), in named steps:
 * replay from the Redis cache -> acquire the key's lock (or await its in-flight twin) -> write
 * record + payment + outbox row in one statement (the UNIQUE constraint is the guard) -> cache
 * the response -> release. Redis failing anywhere degrades to the database path (or
 * IdempotencyCacheUnavailable with REDIS_FAILURE_MODE=closed). Refusals are domain errors
 * (payment-errors.ts); the HTTP layer maps them to problem+json.
 */
export function createPaymentService(deps: CreatePaymentDeps) {
  const { logger, cache } = deps;
  const { redis, write, inFlight } = buildSteps(deps);

  return async function createPayment(
    merchant: Merchant,
    key: string,
    body: CreatePaymentBody,
  ): Promise<CreateOutcome> {
    const fingerprint = requestFingerprint('POST', '/payments', body);

    const cached = await redis.attempt('cache-get', () => cache.get(merchant.id, key));
    if (cached) return replayStoredResponse(cached, fingerprint);

    const lock = await acquireKeyLock(
      deps.locks,
      redis,
      merchant.id,
      key,
      fingerprint.toString('hex'),
    );
    if (lock.kind === 'held') {
      return awaitInFlightTwin(inFlight, merchant, key, fingerprint, lock.holderFingerprint);
    }
    try {
      await deps.beforeWrite?.();
      const { created, stored } = await writePaymentOnce(write, merchant, key, body, fingerprint);
      // The cache write and the release go out together; on one connection Redis applies them
      // in order, so no request sees the key unlocked before its response is cached.
      await Promise.all([cacheResponse(cache, logger, merchant.id, key, stored), lock.release()]);
      if (!created) return replayStoredResponse(stored, fingerprint);
      return {
        status: stored.status,
        body: stored.body,
        paymentId: stored.paymentId,
        replayed: false,
      };
    } finally {
      await lock.release();
    }
  };
}

export type CreatePayment = ReturnType<typeof createPaymentService>;
