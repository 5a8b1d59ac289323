import { DomainError } from '../platform/errors/domain-error.js';

/** The payment to refund does not exist for this merchant (404 over HTTP). */
export class RefundPaymentNotFound extends DomainError {
  readonly code = 'not_found';

  constructor(paymentId: string) {
    super(`No payment ${paymentId}.`);
  }
}

/** Only a settled payment can be refunded (422 over HTTP). */
export class PaymentNotRefundable extends DomainError {
  readonly code = 'payment_not_refundable';

  constructor(status: string) {
    super(
      status === 'requires_capture'
        ? 'The payment is authorized but not captured; only a captured amount can be refunded (capture it, or cancel it to release the hold).'
        : `The payment is ${status}; only a settled payment can be refunded.`,
    );
  }
}

/** The refund would take the refunds past the payment's amount (422 over HTTP). */
export class RefundExceedsPayment extends DomainError {
  readonly code = 'refund_exceeds_payment';

  constructor(requested: number | null, remaining: number) {
    super(
      requested === null
        ? 'Nothing is left to refund on this payment.'
        : `The refund of ${requested} exceeds the ${remaining} left to refund on this payment.`,
    );
  }
}
