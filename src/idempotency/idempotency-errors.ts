import { DomainError } from '../platform/errors/domain-error.js';

/** The key was already used with a different request (422 over HTTP). */
export class IdempotencyKeyReused extends DomainError {
  readonly code = 'idempotency_key_reused';

  constructor() {
    super(
      'This Idempotency-Key was used with a different request body; use a new key for a new request.',
    );
  }
}

/** Another request with this key is still being processed (409 over HTTP, with a retry hint). */
export class IdempotencyKeyInUse extends DomainError {
  readonly code = 'idempotency_key_in_use';

  constructor(retryAfterSeconds: number) {
    super('A request with this Idempotency-Key is still being processed; retry after a moment.', {
      retryAfterSeconds,
    });
  }
}

/** The idempotency cache is down and REDIS_FAILURE_MODE=closed (503 over HTTP). */
export class IdempotencyCacheUnavailable extends DomainError {
  readonly code = 'service_unavailable';

  constructor(retryAfterSeconds: number, cause: unknown) {
    super('The idempotency cache is unavailable.', { retryAfterSeconds, cause });
  }
}
