import {
  RateLimiterMemory,
  RateLimiterRedis,
  RateLimiterRes,
  RLWrapperTimeouts,
} from 'rate-limiter-flexible';
import type { OutageLog } from '../platform/outage-log.js';
import type { Redis } from '../platform/redis.js';
import { rateLimitDecisions } from './rate-limit-metrics.js';
import { TOKEN_BUCKET_SCRIPT } from './token-bucket-script.js';

/** A token bucket: `ratePerSecond` sustained, up to `burst` at once. `name` is shown to clients. */
export interface RatePolicy {
  name: string;
  ratePerSecond: number;
  burst: number;
}

export interface RateDecision {
  allowed: boolean;
  /** Requests that could be sent at once right now. */
  remaining: number;
  /** Seconds until the quota is whole again (`t` of the RateLimit field). */
  resetSeconds: number;
  /** Seconds until the next request can pass (Retry-After of a refusal); 0 when allowed. */
  retryAfterSeconds: number;
}

/**
 * Spends `cost` requests (default 1) of `key`'s bucket under `policy`; never throws for a Redis
 * failure. A cost of 0 only reads the bucket (`remaining`), e.g. to refuse before any work.
 */
export type RateLimit = (
  scope: string,
  key: string,
  policy: RatePolicy,
  cost?: number,
) => Promise<RateDecision>;

/**
 * Rate limits shared by every replica through Redis (rate-limiter-flexible's RateLimiterRedis
 * running a token-bucket script), each call bounded by `timeoutMs` (RLWrapperTimeouts). When
 * Redis fails or is slower than that, the same request is counted by a per-process
 * RateLimiterMemory with the same quota instead: limits keep applying per process while Redis
 * is away, and no request waits on a frozen Redis for longer than `timeoutMs`.
 */
export function createRateLimit(
  redis: Redis,
  options: {
    keyPrefix: string;
    timeoutMs: number;
    /** The process's Redis outage log: a few lines per outage (no stack), not one per request. */
    outage: OutageLog;
  },
): RateLimit {
  const limiters = new Map<string, { shared: RLWrapperTimeouts; local: RateLimiterMemory }>();
  const { outage } = options;

  const limitersFor = (scope: string, policy: RatePolicy) => {
    const id = `${scope}:${policy.name}:${policy.ratePerSecond}:${policy.burst}`;
    let pair = limiters.get(id);
    if (!pair) {
      // The quota is the burst; the duration is how long an empty bucket takes to refill.
      const points = policy.burst;
      const duration = policy.burst / policy.ratePerSecond;
      const keyPrefix = `${options.keyPrefix}rl:${scope}:${policy.name}`;
      const store = new RateLimiterRedis({
        storeClient: redis,
        keyPrefix,
        points,
        duration,
        customIncrTtlLuaScript: TOKEN_BUCKET_SCRIPT,
        // A disconnected client fails at once instead of waiting for the timeout.
        rejectIfRedisNotReady: true,
      });
      pair = {
        shared: new RLWrapperTimeouts({ limiter: store, timeoutMs: options.timeoutMs }),
        local: new RateLimiterMemory({ keyPrefix, points, duration }),
      };
      limiters.set(id, pair);
    }
    return pair;
  };

  return async (scope, key, policy, cost = 1) => {
    const { shared, local } = limitersFor(scope, policy);
    let store: 'redis' | 'memory' = 'redis';
    let outcome: RateLimiterRes | Error;
    let allowed: boolean;
    try {
      outcome = await shared.consume(key, cost);
      allowed = true;
      outage.succeeded();
    } catch (error) {
      if (error instanceof RateLimiterRes) {
        outcome = error;
        allowed = false;
        outage.succeeded();
      } else {
        store = 'memory';
        outage.failed(error, { fallback: 'rate limiting in this process only' });
        try {
          outcome = await local.consume(key, cost);
          allowed = true;
        } catch (refused) {
          if (!(refused instanceof RateLimiterRes)) throw refused;
          outcome = refused;
          allowed = false;
        }
      }
    }
    if (cost > 0)
      rateLimitDecisions.inc({ scope, outcome: allowed ? 'allowed' : 'limited', store });
    const res = outcome;
    const fullSeconds = Math.ceil(policy.burst / policy.ratePerSecond);
    return {
      allowed,
      remaining: Math.max(0, res.remainingPoints),
      // Allowed: the store says when the bucket is full again. Refused: at most a full refill.
      resetSeconds: allowed ? Math.ceil(res.msBeforeNext / 1000) : fullSeconds,
      retryAfterSeconds: allowed ? 0 : Math.max(1, Math.ceil(res.msBeforeNext / 1000)),
    };
  };
}
