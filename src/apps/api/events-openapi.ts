import type { z } from 'zod';
import { EVENT_TYPES } from '../../events/event-types.js';
import { cloudEventSchema, eventListSchema } from '../../webhooks/event-list-schemas.js';
import {
  limitParameter,
  paymentIdParameter,
  problems,
  ref,
  type JsonObject,
} from './openapi-parts.js';

// GET /events and GET /events/{id} of the OpenAPI document (issue 40 item 7, DESIGN 129).

/** The component schemas these operations name. */
export const eventSchemas: { schema: z.ZodType; io: 'input' | 'output' }[] = [
  { schema: cloudEventSchema, io: 'output' },
  { schema: eventListSchema, io: 'output' },
];

function query(name: string, description: string, schema: JsonObject): JsonObject {
  return { name, in: 'query', required: false, description, schema };
}

const instant = { type: 'string', format: 'date-time' };

export function eventPaths(): JsonObject {
  return {
    '/events': {
      get: {
        operationId: 'listEvents',
        description:
          'Your events of the last EVENT_RETENTION_DAYS (30 by default), every type, as the ' +
          'CloudEvents the `payments.events` topic and webhooks carry (the same bytes), newest first.',
        parameters: [
          limitParameter,
          query(
            'starting_after',
            'The id of one of your events: the page starts after it (newest first). ' +
              'An id that is not one of yours is refused with 400 `validation_failed`.',
            { type: 'string', format: 'uuid' },
          ),
          query('type', 'Only events of this type; another value is 400.', {
            type: 'string',
            enum: [...EVENT_TYPES],
          }),
          query('created[gte]', 'Only events created at or after this RFC 3339 instant.', instant),
          query(
            'created[lt]',
            'Only events created before this RFC 3339 instant; must be after created[gte].',
            instant,
          ),
        ],
        responses: {
          '200': {
            description: 'Newest first.',
            content: { 'application/json': { schema: ref('EventList') } },
          },
          ...problems('validation_failed', 'unauthorized', 'rate_limited', 'service_unavailable'),
        },
      },
    },
    '/events/{id}': {
      get: {
        operationId: 'getEvent',
        parameters: [{ ...paymentIdParameter, description: 'The event id.' }],
        responses: {
          '200': {
            description: 'The event, while within EVENT_RETENTION_DAYS.',
            content: { 'application/json': { schema: ref('Event') } },
          },
          ...problems('unauthorized', 'not_found', 'rate_limited', 'service_unavailable'),
        },
      },
    },
  };
}
