import { timingSafeEqual } from 'node:crypto';
import { v7 as uuidv7 } from 'uuid';
import { ApiError } from '../http/api-error.js';
import { requestFingerprint } from '../idempotency/fingerprint.js';
import {
  deleteExpiredKey,
  findKey,
  insertPaymentOnce,
} from '../idempotency/idempotency-repository.js';
import type { KeyLocks } from '../idempotency/key-lock.js';
import type { ResponseCache } from '../idempotency/response-cache.js';
import type { StoredResponse } from '../idempotency/stored-response.js';
import type { Merchant } from '../merchants/merchant-repository.js';
import { paymentEventId } from '../outbox/event-id.js';
import type { Config } from '../platform/config.js';
import type { Queryable } from '../platform/db.js';
import { isDatabaseUnavailable } from '../platform/db-errors.js';
import type { Logger } from '../platform/logger.js';
import { newPaymentResource } from './payment-resource.js';
import type { CreatePaymentBody } from './payment-schemas.js';

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

export interface CreateOutcome {
  status: number;
  body: string;
  paymentId: string;
  replayed: boolean;
}

/** An outage is reported every few seconds while it lasts, not on every request. */
const REDIS_WARNING_INTERVAL_MS = 5_000;

/** How often a request waiting on an in-flight twin looks for its result (`wait` mode). */
const WAIT_POLL_MS = 25;

/**
 * POST /payments, exactly once per (merchant, Idempotency-Key):
 * Redis cache of completed responses -> Redlock on the key -> one database statement writing
 * record + payment + outbox row (the UNIQUE constraint is the guard) -> cache -> release.
 * Redis failing anywhere degrades to the database path (or 503 with REDIS_FAILURE_MODE=closed).
 */
export function createPaymentService(deps: CreatePaymentDeps) {
  const { config, logger } = deps;
  const now = deps.now ?? (() => new Date());
  const sleep = deps.sleep ?? ((ms: number) => new Promise((r) => setTimeout(r, ms)));
  const failClosed = config.REDIS_FAILURE_MODE === 'closed';
  let lastRedisWarning = 0;

  /** Runs a Redis step; on failure either degrades (returns undefined) or answers 503. */
  async function viaRedis<T>(step: string, fn: () => Promise<T>): Promise<T | undefined> {
    try {
      return await fn();
    } catch (error) {
      redisFailed(step, error);
      return undefined;
    }
  }

  /** Redis is unreachable: degrade to the database path, or answer 503 when failing closed. */
  function redisFailed(step: string, error: unknown): void {
    if (failClosed) {
      throw new ApiError('service_unavailable', 'The idempotency cache is unavailable.', {
        headers: { 'Retry-After': String(config.UNAVAILABLE_RETRY_AFTER_SECONDS) },
        cause: error,
      });
    }
    // Once per interval, not once per request: an outage must not flood the logs.
    if (Date.now() - lastRedisWarning >= REDIS_WARNING_INTERVAL_MS) {
      lastRedisWarning = Date.now();
      logger.warn({ err: error, step }, 'redis unavailable; continuing on the database path');
    }
  }

  async function database<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (error) {
      if (isDatabaseUnavailable(error)) {
        throw new ApiError('service_unavailable', 'The payment database is unavailable.', {
          headers: { 'Retry-After': String(config.UNAVAILABLE_RETRY_AFTER_SECONDS) },
          cause: error,
        });
      }
      throw error;
    }
  }

  /** 422 unless the stored request is this request. */
  function assertSameRequest(storedFingerprintHex: string, fingerprint: Buffer): void {
    const stored = Buffer.from(storedFingerprintHex, 'hex');
    if (stored.length !== fingerprint.length || !timingSafeEqual(stored, fingerprint)) {
      throw new ApiError(
        'idempotency_key_reused',
        'This Idempotency-Key was used with a different request body; use a new key for a new payment.',
      );
    }
  }

  /** The stored answer for this request: a replay, or 422 when the key was used differently. */
  function answer(stored: StoredResponse, fingerprint: Buffer): CreateOutcome {
    assertSameRequest(stored.fingerprint, fingerprint);
    return {
      status: stored.status,
      body: stored.body,
      paymentId: stored.paymentId,
      replayed: true,
    };
  }

  /** Writes the payment if the key is free; otherwise returns the key's live record. */
  async function writeOnce(
    merchant: Merchant,
    key: string,
    body: CreatePaymentBody,
    fingerprint: Buffer,
  ): Promise<{ created: boolean; stored: StoredResponse }> {
    // Twice at most: the second pass follows the removal of an expired record.
    for (let pass = 0; pass < 2; pass++) {
      const paymentId = uuidv7();
      const createdAt = now();
      const resource = newPaymentResource(paymentId, body, createdAt);
      const responseBody = JSON.stringify(resource);
      const stored = await database(() =>
        insertPaymentOnce(deps.db, {
          merchantId: merchant.id,
          idempotencyKey: key,
          fingerprint,
          ttlSeconds: config.IDEMPOTENCY_KEY_TTL_SECONDS,
          response: { status: 202, body: responseBody },
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
            topic: config.KAFKA_TOPIC_PAYMENTS,
            data: resource,
          },
        }),
      );
      if (stored) return { created: true, stored };
      const existing = await database(() => findKey(deps.db, merchant.id, key));
      if (existing?.kind === 'live') return { created: false, stored: existing.response };
      if (existing?.kind === 'expired') {
        await database(() => deleteExpiredKey(deps.db, merchant.id, key));
      }
      // null: reaped between the two statements; either way the key is free again.
    }
    throw new Error(`idempotency key could not be claimed or read after retrying`);
  }

  /** Another request holds the key: 422 if it is a different request, else 409 or wait. */
  async function inFlight(
    merchant: Merchant,
    key: string,
    fingerprint: Buffer,
    holderFingerprint: string | null,
  ): Promise<CreateOutcome> {
    // 422 wins over 409: a different request with the same key is wrong however it ends.
    if (holderFingerprint !== null) assertSameRequest(holderFingerprint, fingerprint);
    const deadline =
      Date.now() + (config.IDEMPOTENCY_IN_FLIGHT === 'wait' ? config.IDEMPOTENCY_WAIT_MS : 0);
    for (;;) {
      // The holder may have finished since our cache miss: its result is the answer.
      const cached = await viaRedis('cache-get', () => deps.cache.get(merchant.id, key));
      if (cached) return answer(cached, fingerprint);
      if (Date.now() >= deadline) break;
      await sleep(WAIT_POLL_MS);
    }
    const found = await database(() => findKey(deps.db, merchant.id, key));
    if (found?.kind === 'live') return answer(found.response, fingerprint);
    throw new ApiError(
      'idempotency_key_in_use',
      'A request with this Idempotency-Key is still being processed; retry after a moment.',
      { headers: { 'Retry-After': String(config.IDEMPOTENCY_RETRY_AFTER_SECONDS) } },
    );
  }

  return async function createPayment(
    merchant: Merchant,
    key: string,
    body: CreatePaymentBody,
  ): Promise<CreateOutcome> {
    const fingerprint = requestFingerprint('POST', '/payments', fingerprinted(body));

    const cached = await viaRedis('cache-get', () => deps.cache.get(merchant.id, key));
    if (cached) return answer(cached, fingerprint);

    const lock = await viaRedis('lock', () =>
      deps.locks.acquire(merchant.id, key, fingerprint.toString('hex')),
    );
    if (lock?.kind === 'held') {
      return inFlight(merchant, key, fingerprint, lock.holderFingerprint);
    }
    if (lock?.kind === 'unavailable') redisFailed('lock', lock.error);

    let released = false;
    const release = async () => {
      if (released || lock?.kind !== 'acquired') return;
      released = true;
      await lock.release();
    };
    try {
      await deps.beforeWrite?.();
      const { created, stored } = await writeOnce(merchant, key, body, fingerprint);
      // After the commit the answer is decided: a cache failure is logged, never a 503. The
      // cache write and the release go out together; on one connection Redis applies them in
      // order, so no request sees the key unlocked before its response is cached.
      const caching = deps.cache.set(merchant.id, key, stored).catch((error: unknown) => {
        logger.warn({ err: error }, 'could not cache the response; replays will use the database');
      });
      await Promise.all([caching, release()]);
      if (!created) return answer(stored, fingerprint);
      return {
        status: stored.status,
        body: stored.body,
        paymentId: stored.paymentId,
        replayed: false,
      };
    } finally {
      await release();
    }
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
