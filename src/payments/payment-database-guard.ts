import { isDatabaseUnavailable } from '../platform/db-errors.js';
import { PaymentDatabaseUnavailable } from './payment-errors.js';

/** Runs a database step of POST /payments. */
export type PaymentDatabaseGuard = <T>(fn: () => Promise<T>) => Promise<T>;

/** Postgres being unreachable becomes PaymentDatabaseUnavailable (with a retry hint). */
export function paymentDatabaseGuard(retryAfterSeconds: number): PaymentDatabaseGuard {
  return async (fn) => {
    try {
      return await fn();
    } catch (error) {
      if (isDatabaseUnavailable(error)) {
        throw new PaymentDatabaseUnavailable(retryAfterSeconds, error);
      }
      throw error;
    }
  };
}
