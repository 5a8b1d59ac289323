import { z } from 'zod';
import { ERRORS, type ErrorCode } from '../../http/api-error.js';
import {
  createPaymentBodySchema,
  listPaymentsQuerySchema,
  paymentListSchema,
  paymentSchema,
  problemSchema,
} from '../../payments/payment-schemas.js';

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
  schema: { type: 'string', minLength: 1, maxLength: 257 },
};

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
      },
      ...problems(
        'idempotency_key_missing',
        'idempotency_key_invalid',
        'malformed_json',
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
  const query = z.toJSONSchema(listPaymentsQuerySchema, { io: 'input' }) as {
    properties: Record<string, JsonObject>;
  };
  return {
    operationId: 'listPayments',
    parameters: Object.entries(query.properties).map(([name, schema]) => ({
      name,
      in: 'query',
      required: false,
      schema,
    })),
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
        'Idempotent payments: at most one payment per (merchant, Idempotency-Key). Errors are RFC 9457 problem details.',
    },
    security: [{ apiKey: [] }],
    paths: {
      '/payments': { post: createPaymentOperation(), get: listPaymentsOperation() },
      '/payments/{id}': { get: getPaymentOperation() },
    },
    components: {
      securitySchemes: { apiKey: { type: 'http', scheme: 'bearer' } },
      schemas: components([
        { schema: createPaymentBodySchema, io: 'input' },
        { schema: paymentSchema, io: 'output' },
        { schema: paymentListSchema, io: 'output' },
        { schema: problemSchema, io: 'output' },
      ]),
    },
  };
}
