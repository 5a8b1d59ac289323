import { isDatabaseUnavailable } from '../platform/db-errors.js';
import type { OutageLog } from '../platform/outage-log.js';
import { PaymentDatabaseUnavailable } from './payment-errors.js';

/** Runs a database step of POST /payments. */
export type PaymentDatabaseGuard = <T>(fn: () => Promise<T>) => Promise<T>;

/**
 * Postgres being unreachable becomes PaymentDatabaseUnavailable (with a retry hint); a success
 * ends a Postgres outage in `outage` (its failures are logged where the 503 is answered).
 */
export function paymentDatabaseGuard(
  retryAfterSeconds: number,
  outage?: OutageLog,
): PaymentDatabaseGuard {
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
