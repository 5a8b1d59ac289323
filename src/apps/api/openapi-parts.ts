import { z } from 'zod';
import { ERRORS, type ErrorCode } from '../../http/api-error.js';
import {
  IDEMPOTENCY_KEY_HEADER_MAX_LENGTH,
  IDEMPOTENCY_KEY_HEADER_PATTERN,
} from '../../http/idempotency-key-header.js';
import { MAX_LIST_LIMIT } from '../../http/list-page.js';

// The pieces every operation of the OpenAPI document is built from (openapi.ts assembles it).

export type JsonObject = Record<string, unknown>;

/**
 * Converts zod schemas to OpenAPI 3.1 component schemas (JSON Schema 2020-12). Named schemas
 * (`.meta({ id })`) become components; `$defs` references are rewritten to point at them.
 */
export function components(entries: { schema: z.ZodType; io: 'input' | 'output' }[]): JsonObject {
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

export const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });

/** Errors whose answer tells the client when to retry. */
const RETRY_AFTER: ReadonlySet<ErrorCode> = new Set([
  'idempotency_key_in_use',
  'rate_limited',
  'service_unavailable',
]);

export function problems(...codes: ErrorCode[]): JsonObject {
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

/**
 * The 202 of a creating POST: the new resource, or the stored response replayed (header
 * Idempotent-Replayed: true), with its Location.
 */
export function acceptedResponse(description: string, schema: string): JsonObject {
  return {
    description,
    headers: {
      Location: { schema: { type: 'string' } },
      'Idempotent-Replayed': { schema: { type: 'string', enum: ['true'] } },
    },
    content: { 'application/json': { schema: ref(schema) } },
  };
}

export const idempotencyKeyHeader = {
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
export const limitParameter = {
  name: 'limit',
  in: 'query',
  required: false,
  description: `Page size, 1-${MAX_LIST_LIMIT}.`,
  schema: { type: 'integer', minimum: 1, maximum: MAX_LIST_LIMIT, default: 10 },
};

export const paymentIdParameter = {
  name: 'id',
  in: 'path',
  required: true,
  schema: { type: 'string', format: 'uuid' },
};

/** An OpenAPI link passing the response body's `id` to `operationId` as `parameter`. */
export function bodyIdLink(operationId: string, parameter: string): JsonObject {
  return { operationId, parameters: { [parameter]: '$response.body#/id' } };
}
