import {
  acceptedResponse,
  idempotencyKeyHeader,
  paymentIdParameter,
  problems,
  ref,
  type JsonObject,
} from './openapi-parts.js';

// The second step of a manual payment (issue 40): capture and cancel.

const COMMON_PROBLEMS = [
  'idempotency_key_missing',
  'idempotency_key_invalid',
  'malformed_json',
  'malformed_body',
  'invalid_encoding',
  'validation_failed',
  'unauthorized',
  'not_found',
  'idempotency_key_in_use',
  'payload_too_large',
  'unsupported_media_type',
  'idempotency_key_reused',
  'capture_method_automatic',
  'payment_already_canceled',
  'payment_already_captured',
  'payment_not_capturable',
  'payment_authorization_pending',
] as const;

function holdOperation(
  operationId: string,
  description: string,
  request: string,
  extra: readonly 'amount_exceeds_authorization'[],
): JsonObject {
  return {
    operationId,
    description,
    parameters: [paymentIdParameter, idempotencyKeyHeader],
    // Required: the API reads a JSON body (`{}` for none), as on every POST (415 without one).
    requestBody: {
      required: true,
      content: { 'application/json': { schema: ref(request) } },
    },
    responses: {
      '202': acceptedResponse(
        'Decided (the payment as it was, requires_capture; the acquirer is called asynchronously) or the stored response replayed (header Idempotent-Replayed: true). Location: /payments/{id}.',
        'Payment',
      ),
      ...problems(...COMMON_PROBLEMS, ...extra, 'rate_limited', 'service_unavailable'),
    },
  };
}

export function capturePaymentOperation(): JsonObject {
  return holdOperation(
    'capturePayment',
    'Captures a manual payment in requires_capture: all of it, or `amount_to_capture` (the rest of ' +
      'the hold is released). Once per payment. A capture and a cancel racing: exactly one wins, the ' +
      "other gets the winner's code (payment_already_captured or payment_already_canceled). " +
      'payment_authorization_pending (409) while the payment is still being authorized, ' +
      'payment_not_capturable (422) once it failed. ' +
      'The payment becomes settled (amount_captured) with payment.settled; a capture the issuer ' +
      'declines voids the hold and fails the payment (capture_declined).',
    'CapturePaymentRequest',
    ['amount_exceeds_authorization'],
  );
}

export function cancelPaymentOperation(): JsonObject {
  return holdOperation(
    'cancelPayment',
    'Cancels a manual payment in requires_capture: its hold is voided and it becomes canceled ' +
      '(canceled_at, cancellation_reason) with payment.canceled. No refund object. An ' +
      'authorization nobody captures by capture_before is canceled the same way, reason expired.',
    'CancelPaymentRequest',
    [],
  );
}
