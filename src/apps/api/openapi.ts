import { z } from 'zod';
import { ERRORS, type ErrorCode } from '../../http/api-error.js';
import {
  IDEMPOTENCY_KEY_HEADER_MAX_LENGTH,
  IDEMPOTENCY_KEY_HEADER_PATTERN,
} from '../../idempotency/idempotency-key-header.js';
import {
  createPaymentBodySchema,
  MAX_LIST_LIMIT,
  paymentListSchema,
  paymentSchema,
  problemSchema,
} from '../../payments/payment-schemas.js';
import {
  createRefundBodySchema,
  refundListSchema,
  refundSchema,
} from '../../refunds/refund-schemas.js';

type JsonObject = Record<string, unknown>;

/**
 * Converts zod schemas to OpenAPI 3.1 component schemas (JSON Schema 2020-12). Named schemas
 * (`.meta({ id })`) become components; `$defs` references are rewritten to point at them.
 */
function components(entries: { schema: z.ZodType; io: 'input' | 'output' }[]): JsonObject {
  const schemas: JsonObject = {};
  for (const { schema, io } of entries) {
    const json = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as JsonObject;
    const defs = (json.$defs ?? {}) as JsonObject;
    for (const [name, def] of Object.entries(defs)) {
      schemas[name] = JSON.parse(
        JSON.stringify(def).replaceAll('"#/$defs/', '"#/components/schemas/'),
      ) as unknown;
    }
  }
  return schemas;
}

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });

/** Errors whose answer tells the client when to retry. */
const RETRY_AFTER: ReadonlySet<ErrorCode> = new Set([
  'idempotency_key_in_use',
  'rate_limited',
  'service_unavailable',
]);

function problems(...codes: ErrorCode[]): JsonObject {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of codes) {
    const status = ERRORS[code].status;
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  return Object.fromEntries(
    [...byStatus].map(([status, list]) => [
      String(status),
      {
        description: list.map((c) => `\`${c}\`: ${ERRORS[c].title}`).join('; '),
        ...(list.some((c) => RETRY_AFTER.has(c))
          ? { headers: { 'Retry-After': { schema: { type: 'string', pattern: '^[0-9]+$' } } } }
          : {}),
        content: {
          'application/problem+json': {
            // The codes this status carries here, so clients can switch on `code` exhaustively.
            schema: { allOf: [ref('Problem'), { properties: { code: { enum: list } } }] },
          },
        },
      },
    ]),
  );
}

const idempotencyKeyHeader = {
  name: 'Idempotency-Key',
  in: 'header',
  required: true,
  description:
    'Client-chosen key, 1-255 visible ASCII characters (the quoted structured-field form "abc" means abc). ' +
    'Retries with the same key and body replay the stored response; a different body is 422.',
  schema: {
    type: 'string',
    minLength: 1,
    maxLength: IDEMPOTENCY_KEY_HEADER_MAX_LENGTH,
    pattern: IDEMPOTENCY_KEY_HEADER_PATTERN.source,
  },
};

// Written out rather than converted: the zod schema parses query strings, the document states
// the values they carry.
const limitParameter = {
  name: 'limit',
  in: 'query',
  required: false,
  description: `Page size, 1-${MAX_LIST_LIMIT}.`,
  schema: { type: 'integer', minimum: 1, maximum: MAX_LIST_LIMIT, default: 10 },
};

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

const paymentIdParameter = {
  name: 'id',
  in: 'path',
  required: true,
  schema: { type: 'string', format: 'uuid' },
};

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
        description:
          'Accepted (new) or the stored response replayed (header Idempotent-Replayed: true).',
        headers: {
          Location: { schema: { type: 'string' } },
          'Idempotent-Replayed': { schema: { type: 'string', enum: ['true'] } },
        },
        content: { 'application/json': { schema: ref('Payment') } },
        links: {
          GetPayment: {
            operationId: 'getPayment',
            parameters: { id: '$response.body#/id' },
          },
          ListPaymentsAfter: {
            operationId: 'listPayments',
            parameters: { starting_after: '$response.body#/id' },
          },
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

function createRefundOperation(): JsonObject {
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
        description:
          'Accepted (pending; the acquirer is called asynchronously) or the stored response replayed (header Idempotent-Replayed: true). Location: /refunds/{id}.',
        headers: {
          Location: { schema: { type: 'string' } },
          'Idempotent-Replayed': { schema: { type: 'string', enum: ['true'] } },
        },
        content: { 'application/json': { schema: ref('Refund') } },
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

function listRefundsOperation(): JsonObject {
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

function getRefundOperation(): JsonObject {
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

/** The OpenAPI 3.1 description of the HTTP API, generated from the zod schemas in use. */
export function buildOpenApiDocument(): JsonObject {
  return {
    openapi: '3.1.0',
    info: {
      title: 'Payments API',
      version: '1.0.0',
      description:
        'Idempotent payments: at most one payment per (merchant, Idempotency-Key). Errors are RFC 9457 problem details.',
    },
    security: [{ apiKey: [] }],
    paths: {
      '/payments': { post: createPaymentOperation(), get: listPaymentsOperation() },
      '/payments/{id}': { get: getPaymentOperation() },
      '/payments/{id}/refunds': { post: createRefundOperation(), get: listRefundsOperation() },
      '/refunds/{id}': { get: getRefundOperation() },
    },
    components: {
      securitySchemes: { apiKey: { type: 'http', scheme: 'bearer' } },
      schemas: components([
        { schema: createPaymentBodySchema, io: 'input' },
        { schema: paymentSchema, io: 'output' },
        { schema: paymentListSchema, io: 'output' },
        { schema: createRefundBodySchema, io: 'input' },
        { schema: refundSchema, io: 'output' },
        { schema: refundListSchema, io: 'output' },
        { schema: problemSchema, io: 'output' },
      ]),
    },
  };
}
