import {
  RateLimiterMemory,
  RateLimiterRedis,
  RateLimiterRes,
  RLWrapperTimeouts,
} from 'rate-limiter-flexible';
import { Counter } from 'prom-client';
import { metricsRegistry } from '../platform/metrics.js';
import type { OutageLog } from '../platform/outage-log.js';
import type { Redis } from '../platform/redis.js';

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
  // Every RateLimiterRedis defines the token-bucket script on the client (the same command,
  // `rlflxIncr`). The client pipelines each tick's commands, and a pipeline only knows the
  // scripts defined when it was opened: a limiter first made in a tick that already had a
  // command out (a tier's first request) found the script missing from that pipeline, so the
  // library fell back to its fixed-window INCR and ioredis could crash the process. Defining it
  // here, before any request, gives every pipeline the script.
  new RateLimiterRedis({
    storeClient: redis,
    points: 1,
    duration: 1,
    customIncrTtlLuaScript: TOKEN_BUCKET_SCRIPT,
  });

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

/** Rate-limit decisions by scope, outcome and where they were counted (redis or memory). */
const rateLimitDecisions = new Counter({
  name: 'rate_limit_decisions_total',
  help: 'Rate-limit decisions by scope (merchant, address, key-prefix), outcome and store',
  labelNames: ['scope', 'outcome', 'store'] as const,
  registers: [metricsRegistry],
});

/**
 * A token bucket in one Redis script, given to rate-limiter-flexible's RateLimiterRedis through
 * its `customIncrTtlLuaScript` option (the library's own script counts fixed windows, which let
 * twice the quota through around a window boundary; see DESIGN "Rate limits").
 *
 * The library calls it with KEYS[1] = the bucket, ARGV = [cost, whole seconds of the duration,
 * points, duration in seconds]; here points = the burst and duration = the seconds an empty
 * bucket takes to refill, so the rate is points / duration. It answers {consumed, ms} the way
 * the library reads its own script: `consumed` above `points` means refused. Allowed: consumed
 * = burst - tokens left and ms = until the bucket is full again. Refused: consumed = burst +
 * cost and ms = until `cost` tokens are back. The clock is Redis' own (TIME), so replicas with
 * skewed clocks share one bucket correctly; Redis 5+ replicates the script's effects, not the
 * script, so TIME is allowed before writes.
 */
const TOKEN_BUCKET_SCRIPT = `
local cost = tonumber(ARGV[1])
local burst = tonumber(ARGV[3])
local refill_ms = tonumber(ARGV[4]) * 1000
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(state[1]) or burst
local at = tonumber(state[2]) or now
tokens = math.min(burst, tokens + math.max(0, now - at) * burst / refill_ms)
local allowed = tokens >= cost
if allowed then tokens = tokens - cost end
local to_full = math.ceil((burst - tokens) * refill_ms / burst)
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.max(to_full, 1))
if allowed then
  return {burst - math.floor(tokens), to_full}
end
return {burst + cost, math.ceil((cost - tokens) * refill_ms / burst)}
`;
