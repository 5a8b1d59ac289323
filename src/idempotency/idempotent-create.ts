import type { Config } from '../platform/config/config.js';
import type { Queryable } from '../platform/database/db.js';
import type { Logger } from '../platform/telemetry/logger.js';
import { createOutageLog, type OutageLog } from '../platform/resilience/outage-log.js';
import { IdempotencyKeyInUse } from './idempotency-errors.js';
import { deleteExpiredKey, findKey } from './idempotency-repository.js';
import { claimKey } from './key-claim.js';
import type { KeyLocks } from './key-lock.js';
import { createRedisGuard, type RedisGuard } from './redis-guard.js';
import {
  assertSameRequest,
  outcomeOf,
  replayStoredResponse,
  type CreateOutcome,
} from './replay-stored-response.js';
import type { ResponseCache } from './response-cache.js';
import type { StoredResponse } from './stored-response.js';
import type { DatabaseGuard } from './database-guard.js';

/**
 * The resource's write: ONE transaction that inserts the idempotency record, the resource and
 * its outbox row, or nothing. Resolves with the stored response when it wrote, null when the
 * key already has a record. May throw a domain error (a refusal), writing nothing.
 */
export type InsertOnce = () => Promise<StoredResponse | null>;

/** The settings the idempotency layer reads. */
export type IdempotencySettings = Pick<
  Config,
  | 'IDEMPOTENCY_IN_FLIGHT'
  | 'IDEMPOTENCY_WAIT_MS'
  | 'IDEMPOTENCY_RETRY_AFTER_SECONDS'
  | 'REDIS_FAILURE_MODE'
  | 'UNAVAILABLE_RETRY_AFTER_SECONDS'
  | 'REDIS_BREAKER_COOLDOWN_MS'
  | 'OUTAGE_LOG_INTERVAL_MS'
>;

export interface IdempotentCreateDeps {
  db: Queryable;
  cache: ResponseCache;
  locks: KeyLocks;
  logger: Logger;
  /** Maps "Postgres unreachable" to the component's 503. */
  database: DatabaseGuard;
  config: IdempotencySettings;
  /**
   * The process's one log of Redis outages, shared with the rate limiter and the other creating
   * routes so one outage costs one set of lines; a new one when absent.
   */
  redisOutage?: OutageLog;
  /** Fault injection for tests: runs after the lock is taken, before the database write. */
  beforeWrite?: () => Promise<void>;
  sleep?: (ms: number) => Promise<void>;
}

/**
 * The idempotency contract of every creating POST (payments, refunds), in named steps:
 * replay from the Redis cache -> acquire the key's lock (or await its in-flight twin) -> the
 * resource's one-transaction insert of record + resource + outbox row (the UNIQUE constraint is
 * the guard) -> cache the response -> release. Redis failing anywhere degrades to the database
 * path (or IdempotencyCacheUnavailable with REDIS_FAILURE_MODE=closed). What differs per
 * endpoint is only the fingerprint (method + path + body) and the insert, which the resource
 * passes in: this layer knows no resource.
 */
export function createIdempotentCreate(deps: IdempotentCreateDeps) {
  const { config, logger, cache } = deps;
  const redis = createRedisGuard({
    failClosed: config.REDIS_FAILURE_MODE === 'closed',
    retryAfterSeconds: config.UNAVAILABLE_RETRY_AFTER_SECONDS,
    cooldownMs: config.REDIS_BREAKER_COOLDOWN_MS,
    outage: deps.redisOutage ?? createOutageLog('redis', logger, config.OUTAGE_LOG_INTERVAL_MS),
  });
  const inFlight: InFlightDeps = {
    db: deps.db,
    cache,
    redis,
    database: deps.database,
    sleep: deps.sleep ?? ((ms: number) => new Promise((r) => setTimeout(r, ms))),
    waitMs: config.IDEMPOTENCY_IN_FLIGHT === 'wait' ? config.IDEMPOTENCY_WAIT_MS : 0,
    retryAfterSeconds: config.IDEMPOTENCY_RETRY_AFTER_SECONDS,
  };

  return async function createOnce(
    merchantId: string,
    key: string,
    fingerprint: Buffer,
    insert: InsertOnce,
    /** The raw cache entry the merchant gate read with the rate limit (PeekedLocals), if any. */
    peeked?: string | null,
  ): Promise<CreateOutcome> {
    // One Redis command: the cached response (a replay), else the key's lock.
    const claim = await claimKey(
      deps.locks,
      cache,
      redis,
      merchantId,
      key,
      fingerprint.toString('hex'),
      peeked,
    );
    if (claim.kind === 'cached') return replayStoredResponse(claim.response, fingerprint);
    if (claim.kind === 'held') {
      return awaitInFlightTwin(inFlight, merchantId, key, fingerprint, claim.holderFingerprint);
    }
    try {
      await deps.beforeWrite?.();
      const { created, stored } = await writeOnce(deps, merchantId, key, insert);
      // One command after the commit: cache the response, then release (atomically, so no
      // request sees the key unlocked before its response is cached). Bounded by the command
      // timeout and skipped while Redis is failing: after the commit the answer is decided, so
      // a cache failure only ends up in the Redis outage log (replays then read the database).
      await claim.complete(stored);
      if (!created) return replayStoredResponse(stored, fingerprint);
      return outcomeOf(stored, false);
    } finally {
      // Only when the write threw: after `complete` this does nothing.
      await claim.release();
    }
  };
}

export type CreateOnce = ReturnType<typeof createIdempotentCreate>;

/** How often a request waiting on an in-flight twin looks for its result (`wait` mode). */
const WAIT_POLL_MS = 25;

interface InFlightDeps {
  db: Queryable;
  cache: ResponseCache;
  redis: RedisGuard;
  database: DatabaseGuard;
  sleep: (ms: number) => Promise<void>;
  /** How long to wait for the twin's result: 0 answers at once (IDEMPOTENCY_IN_FLIGHT=reject). */
  waitMs: number;
  retryAfterSeconds: number;
}

/**
 * Another request holds the key: IdempotencyKeyReused if it is a different request, else the
 * twin's result once it is there, else IdempotencyKeyInUse.
 */
async function awaitInFlightTwin(
  deps: InFlightDeps,
  merchantId: string,
  key: string,
  fingerprint: Buffer,
  holderFingerprint: string | null,
): Promise<CreateOutcome> {
  // 422 wins over 409: a different request with the same key is wrong however it ends.
  if (holderFingerprint !== null) assertSameRequest(holderFingerprint, fingerprint);
  const deadline = Date.now() + deps.waitMs;
  for (;;) {
    // The holder may have finished since our cache miss: its result is the answer.
    const cached = await deps.redis.attempt('cache-get', () => deps.cache.get(merchantId, key));
    if (cached) return replayStoredResponse(cached, fingerprint);
    if (Date.now() >= deadline) break;
    await deps.sleep(WAIT_POLL_MS);
  }
  const found = await deps.database(() => findKey(deps.db, merchantId, key));
  if (found?.kind === 'live') return replayStoredResponse(found.response, fingerprint);
  throw new IdempotencyKeyInUse(deps.retryAfterSeconds);
}

/**
 * Claims the key with the resource's insert (the UNIQUE constraint is the guard); otherwise
 * returns the key's live record. An expired record is removed and the insert tried once more.
 * `created`: this request wrote the resource; false when the key already had a record.
 */
async function writeOnce(
  deps: { db: Queryable; database: DatabaseGuard },
  merchantId: string,
  key: string,
  insert: InsertOnce,
): Promise<{ created: boolean; stored: StoredResponse }> {
  // Twice at most: the second pass follows the removal of an expired record.
  for (let pass = 0; pass < 2; pass++) {
    const stored = await deps.database(insert);
    if (stored) return { created: true, stored };
    const existing = await deps.database(() => findKey(deps.db, merchantId, key));
    if (existing?.kind === 'live') return { created: false, stored: existing.response };
    if (existing?.kind === 'expired') {
      await deps.database(() => deleteExpiredKey(deps.db, merchantId, key));
    }
    // null: reaped between the two statements; either way the key is free again.
  }
  throw new Error(`idempotency key could not be claimed or read after retrying`);
}
