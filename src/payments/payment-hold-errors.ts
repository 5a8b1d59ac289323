import { DomainError } from '../platform/errors/domain-error.js';

/** Capture or cancel of an automatic payment (422). */
export class CaptureMethodAutomatic extends DomainError {
  readonly code = 'capture_method_automatic';

  constructor() {
    super('The payment was created with capture_method automatic: it is charged in one step.');
  }
}

/** A capture or cancel of a canceled payment, or one whose cancel won (422). */
export class PaymentAlreadyCanceled extends DomainError {
  readonly code = 'payment_already_canceled';

  constructor(why = 'The payment is canceled; its authorization is released.') {
    super(why);
  }
}

/** A cancel or second capture of a captured payment, or one whose capture won (422). */
export class PaymentAlreadyCaptured extends DomainError {
  readonly code = 'payment_already_captured';

  constructor() {
    super('The payment is captured (or its capture is under way); a payment is captured once.');
  }
}

/** A capture above the authorized amount (422). */
export class AmountExceedsAuthorization extends DomainError {
  readonly code = 'amount_exceeds_authorization';

  constructor(requested: number, authorized: number) {
    super(`amount_to_capture ${requested} exceeds the authorized ${authorized}.`);
  }
}

/** No authorization to act on: the payment failed (422). */
export class PaymentNotCapturable extends DomainError {
  readonly code = 'payment_not_capturable';

  constructor(status: string) {
    super(`The payment is ${status}; it has no authorization to capture or cancel.`);
  }
}

/** Still being authorized (409: retry once it is requires_capture); a code of its own. */
export class PaymentAuthorizationPending extends DomainError {
  readonly code = 'payment_authorization_pending';

  constructor() {
    super('The payment is still being authorized; retry once it is requires_capture.');
  }
}

/** The payment to capture or cancel does not exist for this merchant (404). */
export class PaymentNotFound extends DomainError {
  readonly code = 'not_found';

  constructor(paymentId: string) {
    super(`No payment ${paymentId}.`);
  }
}
