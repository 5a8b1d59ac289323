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

  constructor(
    message: string,
    options: {
      retryAfterSeconds?: number;
      fields?: Readonly<Record<string, string>>;
      cause?: unknown;
    } = {},
  ) {
    super(message, { cause: options.cause });
    this.name = new.target.name;
    this.retryAfterSeconds = options.retryAfterSeconds;
    this.fields = options.fields ?? {};
  }
}
