import {
  acceptedResponse,
  bodyIdLink,
  idempotencyKeyHeader,
  limitParameter,
  paymentIdParameter,
  problems,
  ref,
  type JsonObject,
} from './openapi-parts.js';

// The refund operations of the OpenAPI document.

export function createRefundOperation(): JsonObject {
  return {
    operationId: 'createRefund',
    description:
      'Refunds a settled payment, in full (amount left out: what is left) or in part. The same ' +
      'idempotency contract as POST /payments, in the same per-merchant key space (a key used on ' +
      'another endpoint is 422). The sum of refunds that are not failed never exceeds the amount.',
    parameters: [paymentIdParameter, idempotencyKeyHeader],
    requestBody: {
      required: true,
      content: { 'application/json': { schema: ref('CreateRefundRequest') } },
    },
    responses: {
      '202': {
        ...acceptedResponse(
          'Accepted (pending; the acquirer is called asynchronously) or the stored response replayed (header Idempotent-Replayed: true). Location: /refunds/{id}.',
          'Refund',
        ),
        links: { GetRefund: bodyIdLink('getRefund', 'id') },
      },
      ...problems(
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
        'payment_not_refundable',
        'refund_exceeds_payment',
        'rate_limited',
        'service_unavailable',
      ),
    },
  };
}

export function listRefundsOperation(): JsonObject {
  return {
    operationId: 'listRefunds',
    parameters: [
      paymentIdParameter,
      limitParameter,
      {
        name: 'starting_after',
        in: 'query',
        required: false,
        description:
          "The id of one of this payment's refunds: the page starts after it (newest first). " +
          'An id that is not one of them is refused with 400 `validation_failed`.',
        schema: { type: 'string', format: 'uuid' },
      },
    ],
    responses: {
      '200': {
        description: "The payment's refunds, newest first.",
        content: { 'application/json': { schema: ref('RefundList') } },
      },
      ...problems(
        'validation_failed',
        'unauthorized',
        'not_found',
        'rate_limited',
        'service_unavailable',
      ),
    },
  };
}

export function getRefundOperation(): JsonObject {
  return {
    operationId: 'getRefund',
    parameters: [paymentIdParameter],
    responses: {
      '200': {
        description: 'The refund.',
        content: { 'application/json': { schema: ref('Refund') } },
      },
      ...problems('unauthorized', 'not_found', 'rate_limited', 'service_unavailable'),
    },
  };
}
