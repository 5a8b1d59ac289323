/**
 * The acquirer's two-step operations (issue 40): place a hold (`authorize`), take all or part of
 * it (`capture`: the rest is released) or release it (`void`). Apart from `Acquirer` so a
 * charge-only acquirer stays valid. Same contract as `charge`: each call resolves with a final
 * answer (approved or declined: a decline is permanent) or throws `AcquirerTransientError` when
 * trying again may succeed, honours `signal`, and is idempotent by its key: a retried call gets
 * the stored answer and is never carried out twice. The inquiries return the books' answer for a
 * key, or null when the acquirer never carried it out (safe to send).
 */
export interface AuthorizeRequest {
  /** Stable across every attempt for one payment (`authorizeIdempotencyKey`). */
  idempotencyKey: string;
  paymentId: string;
  amount: number;
  currency: string;
  source: string;
}

export interface CaptureRequest {
  /** Stable across every attempt for one payment (`captureIdempotencyKey`): one capture each. */
  idempotencyKey: string;
  paymentId: string;
  /** At most the authorized amount; the rest of the hold is released. */
  amount: number;
  currency: string;
  /** The payment's source: the simulator's capture behaviour is keyed on it. */
  source: string;
}

export interface VoidRequest {
  /** Stable across every attempt for one payment (`voidIdempotencyKey`). */
  idempotencyKey: string;
  paymentId: string;
  source: string;
}

/** One answer shape for the three: a reference when done, a stable code when refused. */
export type HoldResult =
  { outcome: 'approved'; reference: string } | { outcome: 'declined'; code: string };

export interface HoldAcquirer {
  authorize(request: AuthorizeRequest, signal: AbortSignal): Promise<HoldResult>;
  capture(request: CaptureRequest, signal: AbortSignal): Promise<HoldResult>;
  void(request: VoidRequest, signal: AbortSignal): Promise<HoldResult>;
  inquireAuthorization?(idempotencyKey: string, signal: AbortSignal): Promise<HoldResult | null>;
  inquireCapture?(idempotencyKey: string, signal: AbortSignal): Promise<HoldResult | null>;
  inquireVoid?(idempotencyKey: string, signal: AbortSignal): Promise<HoldResult | null>;
}

/** One key per payment and operation, the same on every attempt. */
export function authorizeIdempotencyKey(paymentId: string): string {
  return `authorize_${paymentId}`;
}

export function captureIdempotencyKey(paymentId: string): string {
  return `capture_${paymentId}`;
}

export function voidIdempotencyKey(paymentId: string): string {
  return `void_${paymentId}`;
}

/**
 * The decline codes of capture and void (the simulator's and the service's vocabulary):
 * a capture above the hold, a capture after a void, a void after a capture, and a capture the
 * issuer refused (the test token `tok_capture_decline`).
 */
export const HOLD_DECLINE_CODES = {
  amountExceedsAuthorization: 'amount_exceeds_authorization',
  authorizationVoided: 'authorization_voided',
  alreadyCaptured: 'already_captured',
  captureDeclined: 'capture_declined',
  noAuthorization: 'no_authorization',
} as const;
