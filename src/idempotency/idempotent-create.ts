import type { Config } from '../platform/config.js';
import type { Queryable } from '../platform/db.js';
import type { Logger } from '../platform/logger.js';
import { createOutageLog, type OutageLog } from '../platform/outage-log.js';
import { acquireKeyLock } from './acquire-key-lock.js';
import { awaitInFlightTwin, type InFlightDeps } from './await-in-flight-twin.js';
import { cacheResponse } from './cache-response.js';
import type { KeyLocks } from './key-lock.js';
import { createRedisGuard } from './redis-guard.js';
import { outcomeOf, replayStoredResponse, type CreateOutcome } from './replay-stored-response.js';
import type { ResponseCache } from './response-cache.js';
import { writeOnce, type DatabaseGuard, type InsertOnce } from './write-once.js';

export interface IdempotentCreateDeps {
  db: Queryable;
  cache: ResponseCache;
  locks: KeyLocks;
  logger: Logger;
  /** Maps "Postgres unreachable" to the component's 503. */
  database: DatabaseGuard;
  config: Pick<
    Config,
    | 'IDEMPOTENCY_IN_FLIGHT'
    | 'IDEMPOTENCY_WAIT_MS'
    | 'IDEMPOTENCY_RETRY_AFTER_SECONDS'
    | 'REDIS_FAILURE_MODE'
    | 'UNAVAILABLE_RETRY_AFTER_SECONDS'
    | 'REDIS_BREAKER_COOLDOWN_MS'
    | 'OUTAGE_LOG_INTERVAL_MS'
  >;
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
 * endpoint is only the fingerprint (method + path + body) and the insert.
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
  ): Promise<CreateOutcome> {
    const cached = await redis.attempt('cache-get', () => cache.get(merchantId, key));
    if (cached) return replayStoredResponse(cached, fingerprint);

    const lock = await acquireKeyLock(
      deps.locks,
      redis,
      merchantId,
      key,
      fingerprint.toString('hex'),
    );
    if (lock.kind === 'held') {
      return awaitInFlightTwin(inFlight, merchantId, key, fingerprint, lock.holderFingerprint);
    }
    // Once: after the commit with the cache write, or in `finally` when the write threw. A
    // second call through the guard would count as the Redis breaker's probe while it is open.
    let releasing: Promise<void> | undefined;
    const release = () => (releasing ??= redis.bestEffort('release', lock.release));
    try {
      await deps.beforeWrite?.();
      const { created, stored } = await writeOnce(
        { db: deps.db, database: deps.database },
        merchantId,
        key,
        insert,
      );
      // The cache write and the release go out together; on one connection Redis applies them
      // in order, so no request sees the key unlocked before its response is cached. Both are
      // bounded by the command timeout and skipped while Redis is failing.
      await Promise.all([cacheResponse(cache, redis, merchantId, key, stored), release()]);
      if (!created) return replayStoredResponse(stored, fingerprint);
      return outcomeOf(stored, false);
    } finally {
      await release();
    }
  };
}

export type CreateOnce = ReturnType<typeof createIdempotentCreate>;
