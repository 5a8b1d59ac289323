import {
  createPaymentBodySchema,
  cancelPaymentBodySchema,
  capturePaymentBodySchema,
  paymentListSchema,
  paymentSchema,
  problemSchema,
} from '../../payments/payment-schemas.js';
import {
  createRefundBodySchema,
  refundListSchema,
  refundSchema,
} from '../../refunds/refund-schemas.js';
import {
  acceptedResponse,
  bodyIdLink,
  components,
  idempotencyKeyHeader,
  limitParameter,
  paymentIdParameter,
  problems,
  ref,
  type JsonObject,
} from './openapi-parts.js';
import { apiKeyScheme, withScopes } from './openapi-scopes.js';
import {
  createRefundOperation,
  getRefundOperation,
  listRefundsOperation,
} from './refunds-openapi.js';
import { eventPaths, eventSchemas } from './events-openapi.js';
import { cancelPaymentOperation, capturePaymentOperation } from './holds-openapi.js';
import { webhookPaths, webhookSchemas } from './webhooks-openapi.js';

const listParameters = [
  limitParameter,
  {
    name: 'starting_after',
    in: 'query',
    required: false,
    description:
      'The id of one of your payments: the page starts after it (newest first). ' +
      'An id that is not one of yours is refused with 400 `validation_failed`.',
    schema: { type: 'string', format: 'uuid' },
  },
];

function createPaymentOperation(): JsonObject {
  return {
    operationId: 'createPayment',
    parameters: [idempotencyKeyHeader],
    requestBody: {
      required: true,
      content: { 'application/json': { schema: ref('CreatePaymentRequest') } },
    },
    responses: {
      '202': {
        ...acceptedResponse(
          'Accepted (new) or the stored response replayed (header Idempotent-Replayed: true).',
          'Payment',
        ),
        links: {
          GetPayment: bodyIdLink('getPayment', 'id'),
          ListPaymentsAfter: bodyIdLink('listPayments', 'starting_after'),
          CreateRefund: bodyIdLink('createRefund', 'id'),
          ListRefunds: bodyIdLink('listRefunds', 'id'),
        },
      },
      ...problems(
        'idempotency_key_missing',
        'idempotency_key_invalid',
        'malformed_json',
        'malformed_body',
        'invalid_encoding',
        'validation_failed',
        'unauthorized',
        'idempotency_key_in_use',
        'payload_too_large',
        'unsupported_media_type',
        'idempotency_key_reused',
        'rate_limited',
        'service_unavailable',
      ),
    },
  };
}

function listPaymentsOperation(): JsonObject {
  return {
    operationId: 'listPayments',
    parameters: listParameters,
    responses: {
      '200': {
        description: 'Newest first.',
        content: { 'application/json': { schema: ref('PaymentList') } },
      },
      ...problems('validation_failed', 'unauthorized', 'rate_limited', 'service_unavailable'),
    },
  };
}

function getPaymentOperation(): JsonObject {
  return {
    operationId: 'getPayment',
    parameters: [paymentIdParameter],
    responses: {
      '200': {
        description: 'The payment.',
        content: { 'application/json': { schema: ref('Payment') } },
      },
      ...problems('unauthorized', 'not_found', 'rate_limited', 'service_unavailable'),
    },
  };
}

/** The OpenAPI 3.1 description of the HTTP API, generated from the zod schemas in use. */
export function buildOpenApiDocument(): JsonObject {
  return {
    openapi: '3.1.0',
    info: {
      title: 'Payments API',
      version: '1.0.0',
      description:
        'Idempotent payments: at most one payment per (merchant, Idempotency-Key). Errors are RFC 9457 problem details. ' +
        'A method that a /payments, /refunds, /webhook_endpoints or /events path does not have is 405 ' +
        '`method_not_allowed` with an Allow header.',
    },
    security: [{ apiKey: [] }],
    paths: withScopes({
      '/payments': { post: createPaymentOperation(), get: listPaymentsOperation() },
      '/payments/{id}': { get: getPaymentOperation() },
      '/payments/{id}/capture': { post: capturePaymentOperation() },
      '/payments/{id}/cancel': { post: cancelPaymentOperation() },
      '/payments/{id}/refunds': { post: createRefundOperation(), get: listRefundsOperation() },
      '/refunds/{id}': { get: getRefundOperation() },
      ...webhookPaths(),
      ...eventPaths(),
    }),
    components: {
      securitySchemes: { apiKey: apiKeyScheme },
      schemas: components([
        { schema: createPaymentBodySchema, io: 'input' },
        { schema: paymentSchema, io: 'output' },
        { schema: paymentListSchema, io: 'output' },
        { schema: capturePaymentBodySchema, io: 'input' },
        { schema: cancelPaymentBodySchema, io: 'input' },
        { schema: createRefundBodySchema, io: 'input' },
        { schema: refundSchema, io: 'output' },
        { schema: refundListSchema, io: 'output' },
        ...webhookSchemas,
        ...eventSchemas,
        { schema: problemSchema, io: 'output' },
      ]),
    },
  };
}
