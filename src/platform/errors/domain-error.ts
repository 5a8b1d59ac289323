/**
 * What a business rule or a dependency can refuse, independent of any transport. The HTTP layer
 * maps each code to a status in one place (src/http/error-handler.ts); workers may log them.
 */
export type DomainErrorCode =
  | 'idempotency_key_reused'
  | 'idempotency_key_in_use'
  | 'service_unavailable'
  | 'not_found'
  | 'payment_not_refundable'
  | 'refund_exceeds_payment'
  | 'capture_method_automatic'
  | 'payment_already_canceled'
  | 'payment_already_captured'
  | 'amount_exceeds_authorization'
  | 'payment_not_capturable'
  | 'payment_authorization_pending'
  | 'unauthorized'
  | 'insufficient_scope'
  | 'rate_limited';

/** Base of the errors components throw: a stable code, a message for people, a retry hint. */
export abstract class DomainError extends Error {
  abstract readonly code: DomainErrorCode;
  /** When retrying makes sense: after this many seconds (becomes Retry-After over HTTP). */
  readonly retryAfterSeconds: number | undefined;
  /** Fields the answer carries besides the error (over HTTP, headers: the RateLimit fields). */
  readonly fields: Readonly<Record<string, string>>;
  /**
   * The refusal is about work still under way (a payment whose authorization is pending): the
   * same request may succeed later. Over HTTP 409 Conflict instead of the code's status.
   */
  readonly stillInProgress: boolean;

  constructor(
    message: string,
    options: {
      retryAfterSeconds?: number;
      fields?: Readonly<Record<string, string>>;
      cause?: unknown;
      stillInProgress?: boolean;
    } = {},
  ) {
    super(message, { cause: options.cause });
    this.name = new.target.name;
    this.retryAfterSeconds = options.retryAfterSeconds;
    this.fields = options.fields ?? {};
    this.stillInProgress = options.stillInProgress ?? false;
  }
}
