import { SpanKind, type Attributes } from '@opentelemetry/api';
import { inSpan } from '../platform/telemetry/tracing.js';

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
 * `inquireCharge` asks the acquirer's books about a key (issue 36): the stored answer, or null
 * when the acquirer never charged it (safe to send). An acquirer without it is re-sent to, the
 * idempotency key being the only guard.
 */
export interface Acquirer {
  charge(request: ChargeRequest, signal: AbortSignal): Promise<ChargeResult>;
  inquireCharge?(idempotencyKey: string, signal: AbortSignal): Promise<ChargeResult | null>;
}

/**
 * Whether a failed call may have reached the acquirer (issue 36, DESIGN 106):
 * - `not_sent`: it never did (connection refused, DNS, breaker open, 429 or 503 before
 *   processing): not an attempt;
 * - `unknown`: it may have (timeout after sending, connection lost before the answer, any other
 *   5xx): the next step is an inquiry by the key, not a new call;
 * - `answered`: the acquirer answered a retryable error (nothing done): a counted attempt.
 */
export type AcquirerDelivery = 'not_sent' | 'unknown' | 'answered';

/** Worth retrying: timeouts, unavailability, rate limits, a lost connection. */
export class AcquirerTransientError extends Error {
  constructor(
    message: string,
    readonly errorClass: string,
    readonly delivery: AcquirerDelivery = 'answered',
    /** The acquirer's Retry-After, in ms, when it gave one. */
    readonly retryAfterMs?: number,
  ) {
    super(message);
    this.name = 'AcquirerTransientError';
  }
}

/** One key per payment, the same on every attempt: a retried charge is recognised, not repeated. */
export function chargeIdempotencyKey(paymentId: string): string {
  return `charge_${paymentId}`;
}

/** What the refund worker asks the acquirer to do: refund once per idempotency key. */
export interface RefundRequest {
  /** Stable across every attempt for one refund (see `refundIdempotencyKey`). */
  idempotencyKey: string;
  refundId: string;
  paymentId: string;
  amount: number;
  currency: string;
  /** The payment's source: the simulator's refund behaviour is keyed on it. */
  source: string;
}

export type RefundResult =
  { outcome: 'approved'; reference: string } | { outcome: 'declined'; code: string };

/**
 * The acquirer's refund operation, apart from `Acquirer` so a charge-only acquirer (test
 * doubles) stays valid. Same contract as `charge`: a final answer, or AcquirerTransientError.
 */
export interface RefundAcquirer {
  refund(request: RefundRequest, signal: AbortSignal): Promise<RefundResult>;
  /** The books' answer for a refund key, or null when never refunded (see inquireCharge). */
  inquireRefund?(idempotencyKey: string, signal: AbortSignal): Promise<RefundResult | null>;
}

/** One key per refund, the same on every attempt: a retried refund is recognised, not repeated. */
export function refundIdempotencyKey(refundId: string): string {
  return `refund_${refundId}`;
}

/**
 * An acquirer call that got no final answer: its class (metrics, dead letters), message, whether
 * it may have reached the acquirer (absent: it answered), and when to try again, if it said.
 */
export interface AcquirerFailure {
  errorClass: string;
  message: string;
  delivery?: 'not_sent' | 'unknown';
  notBeforeMs?: number;
}

/**
 * What a charge, refund or inquiry that threw is retried as: the acquirer's own transient class
 * and delivery, `acquirer_timeout` (outcome unknown) when the call's timeout fired, and
 * `acquirer_error` (outcome unknown) for anything else. Everything is retried: the calls are
 * idempotent and an unknown outcome is asked about first, and giving up early would strand the
 * payment or the refund.
 */
export function classifyAcquirerFailure(error: unknown): AcquirerFailure {
  if (error instanceof AcquirerTransientError) {
    return {
      errorClass: error.errorClass,
      message: error.message,
      ...(error.delivery === 'answered' ? {} : { delivery: error.delivery }),
      ...(error.retryAfterMs === undefined ? {} : { notBeforeMs: error.retryAfterMs }),
    };
  }
  if (error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError')) {
    return {
      errorClass: 'acquirer_timeout',
      message: 'no answer within the call timeout',
      delivery: 'unknown',
    };
  }
  return {
    errorClass: 'acquirer_error',
    message: error instanceof Error ? error.message : String(error),
    delivery: 'unknown',
  };
}

/**
 * An acquirer call (`acquirer charge`, `acquirer refund`) as a CLIENT span under the active
 * attempt: its duration, its answer (approved/declined) and, when it throws (timeout,
 * transient), the error. An HTTP acquirer client would propagate the active context from here.
 */
export function inAcquirerSpan<T extends { outcome: string }>(
  name: string,
  attributes: Attributes,
  call: () => Promise<T>,
): Promise<T> {
  return inSpan(name, { kind: SpanKind.CLIENT, attributes }, undefined, async (span) => {
    const result = await call();
    span.setAttribute('acquirer.outcome', result.outcome);
    return result;
  });
}
