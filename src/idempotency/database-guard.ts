import { DomainError } from '../platform/errors/domain-error.js';
import { isDatabaseUnavailable } from '../platform/database/db-errors.js';
import type { OutageLog } from '../platform/resilience/outage-log.js';

/** Postgres is unreachable while creating a payment or a refund (503 over HTTP). */
export class PaymentDatabaseUnavailable extends DomainError {
  readonly code = 'service_unavailable';

  constructor(retryAfterSeconds: number, cause: unknown) {
    super('The payment database is unavailable.', { retryAfterSeconds, cause });
  }
}

/** Runs a database step of a creating POST (payments, refunds). */
export type DatabaseGuard = <T>(fn: () => Promise<T>) => Promise<T>;

/**
 * Postgres being unreachable becomes PaymentDatabaseUnavailable (with a retry hint); a success
 * ends a Postgres outage in `outage` (its failures are logged where the 503 is answered).
 */
export function createDatabaseGuard(retryAfterSeconds: number, outage?: OutageLog): DatabaseGuard {
  return async (fn) => {
    try {
      const result = await fn();
      outage?.succeeded();
      return result;
    } catch (error) {
      if (isDatabaseUnavailable(error)) {
        throw new PaymentDatabaseUnavailable(retryAfterSeconds, error);
      }
      throw error;
    }
  };
}
