import { problem, type Problem } from './problem.js';

/**
 * Every error code a client can see, with its status and title: the one place these messages
 * live (the OpenAPI document and the tests read them from here).
 */
export const ERRORS = {
  idempotency_key_missing: { status: 400, title: 'Idempotency-Key header is required' },
  idempotency_key_invalid: { status: 400, title: 'Idempotency-Key header is invalid' },
  malformed_json: { status: 400, title: 'Request body is not valid JSON' },
  malformed_body: { status: 400, title: 'Request body could not be read' },
  invalid_encoding: { status: 400, title: 'Request body is not valid UTF-8' },
  validation_failed: { status: 400, title: 'Request validation failed' },
  unauthorized: { status: 401, title: 'Missing or invalid API key' },
  insufficient_scope: { status: 403, title: 'The API key lacks the scope this request needs' },
  not_found: { status: 404, title: 'Not found' },
  method_not_allowed: { status: 405, title: 'Method not allowed' },
  idempotency_key_in_use: {
    status: 409,
    title: 'A request with this Idempotency-Key is still in progress',
  },
  payload_too_large: { status: 413, title: 'Request body is too large' },
  unsupported_media_type: { status: 415, title: 'Content-Type must be application/json' },
  idempotency_key_reused: {
    status: 422,
    title: 'Idempotency-Key was already used with a different request',
  },
  payment_not_refundable: {
    status: 422,
    title: 'Only a settled payment can be refunded',
  },
  refund_exceeds_payment: {
    status: 422,
    title: 'The refund exceeds what is left of the payment',
  },
  capture_method_automatic: {
    status: 422,
    title: 'An automatic payment is captured by settlement; it cannot be captured or canceled',
  },
  payment_already_canceled: { status: 422, title: 'The payment is canceled' },
  payment_already_captured: { status: 422, title: 'The payment is captured already' },
  amount_exceeds_authorization: {
    status: 422,
    title: 'The capture exceeds the authorized amount',
  },
  payment_not_capturable: {
    status: 422,
    title: 'The payment has no authorization to capture or cancel',
  },
  payment_authorization_pending: {
    status: 409,
    title: 'The payment is still being authorized',
  },
  webhook_url_not_allowed: {
    status: 422,
    title: 'The webhook URL is not allowed',
  },
  webhook_endpoint_limit: {
    status: 409,
    title: 'The merchant has as many webhook endpoints as allowed',
  },
  webhook_endpoint_disabled: { status: 409, title: 'The webhook endpoint is disabled' },
  rate_limited: { status: 429, title: 'Too many requests' },
  internal_error: { status: 500, title: 'Internal server error' },
  service_unavailable: { status: 503, title: 'Service temporarily unavailable' },
} as const satisfies Record<string, { status: number; title: string }>;

export type ErrorCode = keyof typeof ERRORS;

/** A request that ends in a problem+json answer; thrown by services, mapped once in the app. */
export class ApiError extends Error {
  constructor(
    readonly code: ErrorCode,
    readonly detail: string,
    readonly options: {
      errors?: Problem['errors'];
      headers?: Record<string, string>;
      cause?: unknown;
      /** Another status than the code's (409 for a refusal of work still under way). */
      status?: 409;
    } = {},
  ) {
    super(`${code}: ${detail}`, { cause: options.cause });
    this.name = 'ApiError';
  }

  get status(): number {
    return this.options.status ?? ERRORS[this.code].status;
  }

  toProblem(): Problem {
    const { title } = ERRORS[this.code];
    return problem(this.status, this.code, title, this.detail, this.options.errors);
  }
}
