import { z } from 'zod';
import { EVENT_TYPES } from '../events/event-types.js';
import { listLimitSchema, listPageSchema } from '../http/list-page.js';
import { instant, isAfter } from './webhook-delivery-schemas.js';

/**
 * The request and response schemas of GET /events and GET /events/{id} (validation and OpenAPI):
 * a merchant's events as the CloudEvents the relay publishes and webhooks send (DESIGN 129).
 */

export const cloudEventSchema = z
  .object({
    specversion: z.literal('1.0'),
    id: z.uuid().describe('The event id (UUIDv5): the same in Kafka, webhooks and here.'),
    type: z.enum(EVENT_TYPES),
    source: z.string(),
    subject: z.uuid().describe('The payment id (a refund event names its payment).'),
    time: z.iso.datetime(),
    datacontenttype: z.literal('application/json'),
    dataversion: z.string().describe('The version of `data`, MAJOR.MINOR.'),
    data: z
      .record(z.string(), z.unknown())
      .describe('The payment (payment.*) or the refund (refund.*) as the event announced it.'),
    traceparent: z.string().optional(),
    tracestate: z.string().optional(),
  })
  .meta({ id: 'Event' });

export const eventListSchema = listPageSchema(cloudEventSchema, 'EventList');

/**
 * GET /events' query. Express's simple query parser gives `created[gte]` as a key of its own (a
 * repeated parameter as an array, which the string schemas refuse).
 */
export const listEventsQuerySchema = z
  .strictObject({
    limit: listLimitSchema,
    starting_after: z
      .guid('must be an event id')
      .optional()
      .describe('An event id: the page starts after it (newest first).'),
    type: z
      .enum(EVENT_TYPES, { error: `must be one of ${EVENT_TYPES.join(', ')}` })
      .optional()
      .describe('Only events of this type.'),
    'created[gte]': instant.optional().describe('Only events created at or after this instant.'),
    'created[lt]': instant.optional().describe('Only events created before this instant.'),
  })
  .refine(
    (query) =>
      query['created[gte]'] === undefined ||
      query['created[lt]'] === undefined ||
      isAfter(query['created[lt]'], query['created[gte]']),
    { message: 'must be after created[gte]', path: ['created[lt]'] },
  );

export type ListEventsQuery = z.infer<typeof listEventsQuerySchema>;
