import { AcquirerTransientError } from './acquirer.js';

/** An acquirer call that got no final answer: its class (metrics, dead letters) and message. */
export interface AcquirerFailure {
  errorClass: string;
  message: string;
}

/**
 * What a charge or refund call that threw is retried as: the acquirer's own transient class,
 * `acquirer_timeout` when the call's timeout fired, and `acquirer_error` for anything else.
 * Everything is retried: both calls are idempotent, so trying again is safe, and giving up
 * early would strand the payment or the refund.
 */
export function classifyAcquirerFailure(error: unknown): AcquirerFailure {
  if (error instanceof AcquirerTransientError) {
    return { errorClass: error.errorClass, message: error.message };
  }
  if (error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError')) {
    return { errorClass: 'acquirer_timeout', message: 'no answer within the call timeout' };
  }
  return {
    errorClass: 'acquirer_error',
    message: error instanceof Error ? error.message : String(error),
  };
}
