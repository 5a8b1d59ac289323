import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import { Counter } from 'prom-client';
import { metricsRegistry } from '../platform/telemetry/metrics.js';
import type { OutageLog } from '../platform/resilience/outage-log.js';
import { hashTag } from '../platform/redis/hash-tag.js';
import type { RedisClient } from '../platform/redis/redis.js';
import { redisScript } from '../platform/redis/redis-script.js';

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
 * RateLimit's spend of one request, and in the same Redis command the value stored at `peekKey`
 * (a Redis key of the caller's, e.g. a cached response): `peeked` is null when there is none,
 * when the request is refused, and when Redis failed (the decision then came from memory).
 */
export type RateLimitAndPeek = (
  scope: string,
  key: string,
  policy: RatePolicy,
  peekKey: string,
) => Promise<RateDecision & { peeked: string | null }>;

export interface RateLimiter {
  limit: RateLimit;
  limitAndPeek: RateLimitAndPeek;
}

export interface RateLimitOptions {
  keyPrefix: string;
  timeoutMs: number;
  /** The process's Redis outage log: a few lines per outage (no stack), not one per request. */
  outage: OutageLog;
}

/** Where a scope's buckets under a policy live: `<prefix>:{<key>}` is one bucket (a Redis hash). */
export function rateBucketPrefix(keyPrefix: string, scope: string, policyName: string): string {
  return `${keyPrefix}rl:${scope}:${policyName}`;
}

/**
 * One bucket's Redis key. The bucket's key (a merchant id, an address) is its Cluster hash tag:
 * a merchant's bucket shares the slot of that merchant's cached responses, which limitAndPeek
 * reads in the same script (DESIGN 123).
 */
export function rateBucketKey(keyPrefix: string, scope: string, policyName: string, key: string) {
  return `${rateBucketPrefix(keyPrefix, scope, policyName)}:${hashTag(key)}`;
}

/** RateLimit alone (the limiter's `limit`). */
export function createRateLimit(redis: RedisClient, options: RateLimitOptions): RateLimit {
  return createRateLimiter(redis, options).limit;
}

/**
 * Rate limits shared by every replica through Redis (a token-bucket script, one command per
 * decision), each call bounded by `timeoutMs`. When Redis fails, is not connected, or is slower
 * than that, the same request is counted by a per-process RateLimiterMemory with the same quota
 * instead: limits keep applying per process while Redis is away, and no request waits on a
 * frozen Redis for longer than `timeoutMs`.
 */
export function createRateLimiter(redis: RedisClient, options: RateLimitOptions): RateLimiter {
  const locals = new Map<string, RateLimiterMemory>();
  const { outage } = options;

  /** The bucket's prefix, the way rate-limiter-flexible named it (`<prefix>:<key>` is the bucket). */
  const prefixOf = (scope: string, policy: RatePolicy) =>
    rateBucketPrefix(options.keyPrefix, scope, policy.name);

  const localFor = (scope: string, policy: RatePolicy) => {
    const id = `${scope}:${policy.name}:${policy.ratePerSecond}:${policy.burst}`;
    let local = locals.get(id);
    if (!local) {
      // The quota is the burst; the duration is how long an empty bucket takes to refill.
      const duration = policy.burst / policy.ratePerSecond;
      local = new RateLimiterMemory({
        keyPrefix: prefixOf(scope, policy),
        points: policy.burst,
        duration,
      });
      locals.set(id, local);
    }
    return local;
  };

  /** The shared bucket: {consumed, ms before next, peeked}; rejects on failure or timeout. */
  const shared = async (
    bucket: string,
    policy: RatePolicy,
    cost: number,
    peekKey: string | undefined,
  ): Promise<[number, number, string | null]> => {
    // Not connected: fail at once instead of waiting for the timeout.
    if (redis.status !== 'ready') throw new Error('Redis connection is not ready');
    const duration = policy.burst / policy.ratePerSecond;
    const keys = peekKey === undefined ? [bucket] : [bucket, peekKey];
    const args = [cost, Math.floor(duration), policy.burst, String(duration)];
    const reply = await withTimeout(tokenBucketScript.run(redis, keys, args), options.timeoutMs);
    const [consumed, ms, peeked] = reply as [number, number, string | null | undefined];
    return [consumed, ms, peeked ?? null];
  };

  const decide = async (
    scope: string,
    key: string,
    policy: RatePolicy,
    cost: number,
    peekKey: string | undefined,
  ): Promise<RateDecision & { peeked: string | null }> => {
    let store: 'redis' | 'memory' = 'redis';
    let remainingPoints: number;
    let msBeforeNext: number;
    let allowed: boolean;
    let peeked: string | null = null;
    try {
      const [consumed, ms, value] = await shared(
        rateBucketKey(options.keyPrefix, scope, policy.name, key),
        policy,
        cost,
        peekKey,
      );
      allowed = consumed <= policy.burst;
      remainingPoints = Math.max(policy.burst - consumed, 0);
      msBeforeNext = ms;
      if (allowed) peeked = value;
      outage.succeeded();
    } catch (error) {
      store = 'memory';
      outage.failed(error, { fallback: 'rate limiting in this process only' });
      let res: RateLimiterRes;
      try {
        res = await localFor(scope, policy).consume(key, cost);
        allowed = true;
      } catch (refused) {
        if (!(refused instanceof RateLimiterRes)) throw refused;
        res = refused;
        allowed = false;
      }
      remainingPoints = res.remainingPoints;
      msBeforeNext = res.msBeforeNext;
    }
    if (cost > 0)
      rateLimitDecisions.inc({ scope, outcome: allowed ? 'allowed' : 'limited', store });
    const fullSeconds = Math.ceil(policy.burst / policy.ratePerSecond);
    return {
      allowed,
      remaining: Math.max(0, remainingPoints),
      // Allowed: the store says when the bucket is full again. Refused: at most a full refill.
      resetSeconds: allowed ? Math.ceil(msBeforeNext / 1000) : fullSeconds,
      retryAfterSeconds: allowed ? 0 : Math.max(1, Math.ceil(msBeforeNext / 1000)),
      peeked,
    };
  };

  return {
    limit: async (scope, key, policy, cost = 1) => {
      const { peeked: _none, ...decision } = await decide(scope, key, policy, cost, undefined);
      return decision;
    },
    limitAndPeek: (scope, key, policy, peekKey) => decide(scope, key, policy, 1, peekKey),
  };
}

/** Rejects with "Operation timed out" after `ms` (the promise itself runs on, its answer dropped). */
function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      reject(new Error('Operation timed out'));
    }, ms);
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error instanceof Error ? error : new Error(String(error)));
      },
    );
  });
}

/** Rate-limit decisions by scope, outcome and where they were counted (redis or memory). */
const rateLimitDecisions = new Counter({
  name: 'rate_limit_decisions_total',
  help: 'Rate-limit decisions by scope (merchant, address, key-prefix), outcome and store',
  labelNames: ['scope', 'outcome', 'store'] as const,
  registers: [metricsRegistry],
});

/**
 * A token bucket in one Redis script (it was given to rate-limiter-flexible's RateLimiterRedis
 * as its `customIncrTtlLuaScript`, and is called the same way now that this module sends it
 * itself: the library's own script counts fixed windows, which let twice the quota through
 * around a window boundary; see DESIGN "Rate limits").
 *
 * KEYS[1] = the bucket, ARGV = [cost, whole seconds of the duration, points, duration in
 * seconds]; here points = the burst and duration = the seconds an empty bucket takes to refill,
 * so the rate is points / duration. It answers {consumed, ms}: `consumed` above `points` means
 * refused. With a KEYS[2], an allowed request also gets that key's value as a third element (the
 * response cache read in the same round trip as the rate limit). Allowed: consumed
 * = burst - tokens left and ms = until the bucket is full again. Refused: consumed = burst +
 * cost and ms = until `cost` tokens are back. The clock is Redis' own (TIME), so replicas with
 * skewed clocks share one bucket correctly; Redis 5+ replicates the script's effects, not the
 * script, so TIME is allowed before writes.
 */
const tokenBucketScript = redisScript(`
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
  if KEYS[2] then
    return {burst - math.floor(tokens), to_full, redis.call('GET', KEYS[2])}
  end
  return {burst - math.floor(tokens), to_full}
end
return {burst + cost, math.ceil((cost - tokens) * refill_ms / burst)}
`);
