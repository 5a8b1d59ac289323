import { DomainError } from '../platform/errors/domain-error.js';

/** No valid API key was presented (401); `fields` carry the failure budget's RateLimit fields. */
export class Unauthenticated extends DomainError {
  readonly code = 'unauthorized';
}

/** A failure budget or the merchant's bucket is spent (429 with Retry-After and RateLimit). */
export class RateLimited extends DomainError {
  readonly code = 'rate_limited';
}

/**
 * The key is valid but lacks the scope the route needs (403). `fields` carry RFC 6750's
 * `WWW-Authenticate: Bearer error="insufficient_scope", scope="..."`, naming it for programs.
 */
export class InsufficientScope extends DomainError {
  readonly code = 'insufficient_scope';

  constructor(readonly scope: string) {
    super(`This API key does not have the scope ${scope}, which this request needs.`, {
      fields: { 'WWW-Authenticate': `Bearer error="insufficient_scope", scope="${scope}"` },
    });
  }
}
