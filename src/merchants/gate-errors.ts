import { DomainError } from '../platform/errors/domain-error.js';

/** No valid API key was presented (401); `fields` carry the failure budget's RateLimit fields. */
export class Unauthenticated extends DomainError {
  readonly code = 'unauthorized';
}

/** A failure budget or the merchant's bucket is spent (429 with Retry-After and RateLimit). */
export class RateLimited extends DomainError {
  readonly code = 'rate_limited';
}
