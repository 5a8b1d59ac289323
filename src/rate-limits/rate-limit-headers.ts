import type { RateDecision, RatePolicy } from './rate-limiter.js';

/**
 * The IETF RateLimit header fields, draft-ietf-httpapi-ratelimit-headers-10 (structured-field
 * form): `RateLimit-Policy: "<name>";q=<burst>;w=<seconds to refill it>` describes the token
 * bucket as a quota of `burst` requests per refill window; `RateLimit: "<name>";r=<remaining>;
 * t=<seconds until the quota is whole>`. Both are integers as the draft requires (w rounds up).
 */
export function rateLimitHeaders(
  policy: RatePolicy,
  decision: RateDecision,
): Record<string, string> {
  const window = Math.max(1, Math.ceil(policy.burst / policy.ratePerSecond));
  return {
    'RateLimit-Policy': `"${policy.name}";q=${policy.burst};w=${window}`,
    RateLimit: `"${policy.name}";r=${decision.remaining};t=${decision.resetSeconds}`,
  };
}
