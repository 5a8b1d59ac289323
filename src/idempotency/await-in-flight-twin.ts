import { findKey } from './idempotency-repository.js';
import type { ResponseCache } from './response-cache.js';
import type { Queryable } from '../platform/db.js';
import type { DatabaseGuard } from './write-once.js';
import { IdempotencyKeyInUse } from './idempotency-errors.js';
import type { RedisGuard } from './redis-guard.js';
import {
  assertSameRequest,
  replayStoredResponse,
  type CreateOutcome,
} from './replay-stored-response.js';

/** How often a request waiting on an in-flight twin looks for its result (`wait` mode). */
const WAIT_POLL_MS = 25;

export interface InFlightDeps {
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
export async function awaitInFlightTwin(
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
