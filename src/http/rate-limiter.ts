/**
 * Token bucket per merchant, in this process's memory: `ratePerSecond` sustained, `burst` at
 * once. Per process rather than in Redis so it adds no round trip and keeps working when Redis
 * is down; with N API replicas a merchant's effective limit is N times the setting.
 */
export function createRateLimiter(
  ratePerSecond: number,
  burst: number,
  now: () => number = () => performance.now(),
) {
  const buckets = new Map<string, { tokens: number; at: number }>();
  return function take(
    merchantId: string,
  ): { allowed: true } | { allowed: false; retryAfterSeconds: number } {
    const t = now();
    const bucket = buckets.get(merchantId) ?? { tokens: burst, at: t };
    bucket.tokens = Math.min(burst, bucket.tokens + ((t - bucket.at) / 1000) * ratePerSecond);
    bucket.at = t;
    buckets.set(merchantId, bucket);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return { allowed: true };
    }
    return {
      allowed: false,
      retryAfterSeconds: Math.max(1, Math.ceil((1 - bucket.tokens) / ratePerSecond)),
    };
  };
}

export type RateLimiter = ReturnType<typeof createRateLimiter>;
