import { DomainError } from '../platform/domain-error.js';

// The idempotency layer's refusals are generic (payments and refunds); re-exported here so
// existing importers keep working.
export {
  IdempotencyCacheUnavailable,
  IdempotencyKeyInUse,
  IdempotencyKeyReused,
} from '../idempotency/idempotency-errors.js';

/** Postgres is unreachable while creating a payment or a refund (503 over HTTP). */
export class PaymentDatabaseUnavailable extends DomainError {
  readonly code = 'service_unavailable';

  constructor(retryAfterSeconds: number, cause: unknown) {
    super('The payment database is unavailable.', { retryAfterSeconds, cause });
  }
}
