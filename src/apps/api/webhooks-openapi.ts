import type { z } from 'zod';
import type { ErrorCode } from '../../http/api-error.js';
import {
  replayBodySchema,
  webhookDeliveryDetailSchema,
  webhookDeliveryListSchema,
  webhookReplaySchema,
  DELIVERY_STATUSES,
} from '../../webhooks/webhook-delivery-schemas.js';
import {
  createdWebhookEndpointSchema,
  createWebhookEndpointBodySchema,
  deletedWebhookEndpointSchema,
  rotatedSecretSchema,
  rotateSecretBodySchema,
  updateWebhookEndpointBodySchema,
  webhookEndpointListSchema,
  webhookEndpointSchema,
} from '../../webhooks/webhook-endpoint-schemas.js';
import {
  bodyIdLink,
  idempotencyKeyHeader,
  limitParameter,
  problems,
  ref,
  type JsonObject,
} from './openapi-parts.js';

// The webhook operations of the OpenAPI document (/webhook_endpoints and below).

/** The component schemas these operations name. */
export const webhookSchemas: { schema: z.ZodType; io: 'input' | 'output' }[] = [
  { schema: createWebhookEndpointBodySchema, io: 'input' },
  { schema: updateWebhookEndpointBodySchema, io: 'input' },
  { schema: rotateSecretBodySchema, io: 'input' },
  { schema: replayBodySchema, io: 'input' },
  { schema: webhookEndpointSchema, io: 'output' },
  { schema: createdWebhookEndpointSchema, io: 'output' },
  { schema: webhookEndpointListSchema, io: 'output' },
  { schema: deletedWebhookEndpointSchema, io: 'output' },
  { schema: rotatedSecretSchema, io: 'output' },
  { schema: webhookDeliveryListSchema, io: 'output' },
  { schema: webhookDeliveryDetailSchema, io: 'output' },
  { schema: webhookReplaySchema, io: 'output' },
];

const endpointId = {
  name: 'id',
  in: 'path',
  required: true,
  schema: { type: 'string', format: 'uuid' },
};
const deliveryId = {
  name: 'delivery_id',
  in: 'path',
  required: true,
  schema: { type: 'string', format: 'uuid' },
};
const ALWAYS: ErrorCode[] = ['unauthorized', 'rate_limited', 'service_unavailable'];
const BODY: ErrorCode[] = [
  'malformed_json',
  'malformed_body',
  'invalid_encoding',
  'validation_failed',
  'payload_too_large',
  'unsupported_media_type',
];
const KEYED: ErrorCode[] = [
  'idempotency_key_invalid',
  'idempotency_key_in_use',
  'idempotency_key_reused',
];

function json(description: string, schema: string): JsonObject {
  return { description, content: { 'application/json': { schema: ref(schema) } } };
}

function body(schema: string, required = true): JsonObject {
  return { required, content: { 'application/json': { schema: ref(schema) } } };
}

function startingAfter(description: string): JsonObject {
  return {
    name: 'starting_after',
    in: 'query',
    required: false,
    description,
    schema: { type: 'string', format: 'uuid' },
  };
}

/** From a created endpoint to every operation on it (the fuzzer's stateful phase follows them). */
function endpointLinks(): JsonObject {
  return {
    GetWebhookEndpoint: bodyIdLink('getWebhookEndpoint', 'id'),
    UpdateWebhookEndpoint: bodyIdLink('updateWebhookEndpoint', 'id'),
    DeleteWebhookEndpoint: bodyIdLink('deleteWebhookEndpoint', 'id'),
    RotateWebhookSecret: bodyIdLink('rotateWebhookSecret', 'id'),
    ListWebhookDeliveries: bodyIdLink('listWebhookDeliveries', 'id'),
    ReplayWebhookEvents: bodyIdLink('replayWebhookEvents', 'id'),
    ListWebhookEndpointsAfter: bodyIdLink('listWebhookEndpoints', 'starting_after'),
  };
}

function endpointOperations(): JsonObject {
  return {
    '/webhook_endpoints': {
      post: {
        operationId: 'createWebhookEndpoint',
        description:
          'Registers an endpoint. The answer carries the signing secret, shown only here (and by rotate_secret). ' +
          'The URL must match its pattern (http(s), no space or control character), be at most 2048 ' +
          'characters, carry no user name or password, and resolve to public addresses only (unless the ' +
          'operator allows a network): anything else is 422 `webhook_url_not_allowed`, whose detail names ' +
          'the rule or the address class. At most WEBHOOK_MAX_ENDPOINTS_PER_MERCHANT endpoints (409). ' +
          'An Idempotency-Key sent empty is 400 `idempotency_key_invalid`.',
        parameters: [
          {
            ...idempotencyKeyHeader,
            required: false,
            description: `Optional here; when sent, ${idempotencyKeyHeader.description}`,
          },
        ],
        requestBody: body('CreateWebhookEndpointRequest'),
        responses: {
          '201': {
            ...json(
              'Created (or the stored answer replayed: header Idempotent-Replayed: true).',
              'CreatedWebhookEndpoint',
            ),
            headers: {
              Location: { schema: { type: 'string' } },
              'Idempotent-Replayed': { schema: { type: 'string', enum: ['true'] } },
            },
            links: endpointLinks(),
          },
          ...problems(
            ...BODY,
            ...KEYED,
            'webhook_url_not_allowed',
            'webhook_endpoint_limit',
            ...ALWAYS,
          ),
        },
      },
      get: {
        operationId: 'listWebhookEndpoints',
        parameters: [
          limitParameter,
          startingAfter(
            'An endpoint id of yours: the page starts after it (oldest first). ' +
              'An id that is not one of yours is refused with 400 `validation_failed`.',
          ),
        ],
        responses: {
          '200': json('Oldest first.', 'WebhookEndpointList'),
          ...problems('validation_failed', ...ALWAYS),
        },
      },
    },
    '/webhook_endpoints/{id}': {
      get: {
        operationId: 'getWebhookEndpoint',
        parameters: [endpointId],
        responses: {
          '200': json('The endpoint (never its secret).', 'WebhookEndpoint'),
          ...problems('not_found', ...ALWAYS),
        },
      },
      patch: {
        operationId: 'updateWebhookEndpoint',
        description:
          'Changes the fields sent. A new url is checked like at creation. disabled: false re-enables a ' +
          'disabled endpoint and clears disabled_reason and failing_since; events missed meanwhile come back by replay.',
        parameters: [endpointId],
        requestBody: body('UpdateWebhookEndpointRequest'),
        responses: {
          '200': json('The endpoint as changed.', 'WebhookEndpoint'),
          ...problems(
            ...BODY,
            'idempotency_key_invalid',
            'not_found',
            'webhook_url_not_allowed',
            ...ALWAYS,
          ),
        },
      },
      delete: {
        operationId: 'deleteWebhookEndpoint',
        parameters: [endpointId],
        responses: {
          '200': json('Deleted, with its secrets and deliveries.', 'DeletedWebhookEndpoint'),
          ...problems('not_found', ...ALWAYS),
        },
      },
    },
    '/webhook_endpoints/{id}/rotate_secret': {
      post: {
        operationId: 'rotateWebhookSecret',
        description:
          'A new signing secret. The previous one keeps signing (a second v1 signature in webhook-signature) ' +
          'until previous_secret_expires_at. No body (and no Content-Type) is {}; a body is JSON (else 415).',
        parameters: [endpointId],
        requestBody: body('RotateWebhookSecretRequest', false),
        responses: {
          '200': json('The new secret, shown only here.', 'RotatedWebhookSecret'),
          ...problems(...BODY, 'not_found', ...ALWAYS),
        },
      },
    },
  };
}

function deliveryOperations(): JsonObject {
  return {
    '/webhook_endpoints/{id}/deliveries': {
      get: {
        operationId: 'listWebhookDeliveries',
        parameters: [
          endpointId,
          limitParameter,
          startingAfter(
            'A delivery id of this endpoint: the page starts after it (newest first). ' +
              'An id that is not one of its deliveries is refused with 400 `validation_failed`.',
          ),
          {
            name: 'status',
            in: 'query',
            required: false,
            schema: { type: 'string', enum: [...DELIVERY_STATUSES] },
          },
        ],
        responses: {
          '200': json('Newest first.', 'WebhookDeliveryList'),
          ...problems('validation_failed', 'not_found', ...ALWAYS),
        },
      },
    },
    '/webhook_endpoints/{id}/deliveries/{delivery_id}': {
      get: {
        operationId: 'getWebhookDelivery',
        parameters: [endpointId, deliveryId],
        responses: {
          '200': json('The delivery with every attempt.', 'WebhookDeliveryDetail'),
          ...problems('not_found', ...ALWAYS),
        },
      },
    },
    '/webhook_endpoints/{id}/deliveries/{delivery_id}/retry': {
      post: {
        operationId: 'retryWebhookDelivery',
        description: 'The delivery becomes pending and due now, with the same webhook-id.',
        parameters: [endpointId, deliveryId],
        responses: {
          '202': {
            description: 'Queued.',
            content: { 'application/json': { schema: ref('WebhookDelivery') } },
          },
          ...problems('not_found', 'webhook_endpoint_disabled', ...ALWAYS),
        },
      },
    },
    '/webhook_endpoints/{id}/replay': {
      post: {
        operationId: 'replayWebhookEvents',
        description:
          'Re-sends every stored event since `since` (until `until`, which must be after `since`: else 400 ' +
          '`validation_failed`) that the endpoint subscribes to, oldest first, ' +
          'at most WEBHOOK_REPLAY_MAX_EVENTS per request: a delivered or failed delivery becomes pending again ' +
          '(same webhook-id), a missing one is created. With has_more, replay again from next_since (inclusive: ' +
          'events at that instant may come twice; receivers deduplicate by webhook-id).',
        parameters: [endpointId, idempotencyKeyHeader],
        requestBody: body('WebhookReplayRequest'),
        responses: {
          '202': {
            ...json(
              'Queued, or the stored answer replayed (header Idempotent-Replayed: true).',
              'WebhookReplay',
            ),
            headers: { 'Idempotent-Replayed': { schema: { type: 'string', enum: ['true'] } } },
          },
          ...problems(
            'idempotency_key_missing',
            ...BODY,
            ...KEYED,
            'not_found',
            'webhook_endpoint_disabled',
            ...ALWAYS,
          ),
        },
      },
    },
  };
}

/** The webhook paths of the document. */
export function webhookPaths(): JsonObject {
  return { ...endpointOperations(), ...deliveryOperations() };
}
