/** What settlement asks the acquirer to do: charge once per idempotency key. */
export interface ChargeRequest {
  /** Stable across every attempt for one payment (see `chargeIdempotencyKey`). */
  idempotencyKey: string;
  paymentId: string;
  amount: number;
  currency: string;
  source: string;
}

export type ChargeResult =
  { outcome: 'approved'; reference: string } | { outcome: 'declined'; code: string };

/**
 * The acquirer behind an interface: the default is the simulator, a real one is an HTTP
 * client. `charge` resolves with a final answer (approved or declined: a decline is permanent)
 * or throws `AcquirerTransientError` when trying again may succeed. It must honour `signal`.
 */
export interface Acquirer {
  charge(request: ChargeRequest, signal: AbortSignal): Promise<ChargeResult>;
}

/** Worth retrying: timeouts, unavailability, rate limits. */
export class AcquirerTransientError extends Error {
  constructor(
    message: string,
    readonly errorClass: 'acquirer_unavailable' | 'acquirer_timeout',
  ) {
    super(message);
    this.name = 'AcquirerTransientError';
  }
}

/** One key per payment, the same on every attempt: a retried charge is recognised, not repeated. */
export function chargeIdempotencyKey(paymentId: string): string {
  return `charge_${paymentId}`;
}
