import { z } from 'zod';
import { listLimitSchema, listPageSchema } from '../http/list-page.js';
import { WEBHOOK_EVENT_TYPES } from './webhook-fanout.js';

/** The request and response schemas of an endpoint's deliveries and replay (validation and OpenAPI). */

export const DELIVERY_STATUSES = ['pending', 'delivered', 'failed'] as const;

export const webhookDeliverySchema = z
  .object({
    id: z.uuid(),
    object: z.literal('webhook_delivery'),
    endpoint_id: z.uuid(),
    event_id: z.uuid().describe('The webhook-id header: the same on every attempt and replay.'),
    event_type: z.enum(WEBHOOK_EVENT_TYPES),
    payment_id: z.uuid(),
    status: z.enum(DELIVERY_STATUSES),
    attempts: z.int(),
    last_attempt_at: z.iso.datetime().nullable(),
    last_status_code: z.int().nullable(),
    last_latency_ms: z.int().nullable(),
    last_error: z.string().nullable(),
    next_attempt_at: z.iso
      .datetime()
      .nullable()
      .describe('When the next attempt is due; null unless pending.'),
    delivered_at: z.iso.datetime().nullable(),
    failed_reason: z
      .string()
      .nullable()
      .describe('attempts_exhausted, endpoint_disabled or gone; null unless failed.'),
    created_at: z.iso.datetime(),
  })
  .meta({ id: 'WebhookDelivery' });

export type WebhookDeliveryResource = z.infer<typeof webhookDeliverySchema>;

export const webhookDeliveryAttemptSchema = z
  .object({
    started_at: z.iso.datetime(),
    status_code: z.int().nullable().describe('Null when no HTTP answer came (timeout, refused).'),
    latency_ms: z.int(),
    error: z.string().nullable(),
  })
  .meta({ id: 'WebhookDeliveryAttempt' });

export const webhookDeliveryDetailSchema = webhookDeliverySchema
  .extend({
    attempt_history: z.array(webhookDeliveryAttemptSchema).describe('Oldest first.'),
  })
  .meta({ id: 'WebhookDeliveryDetail' });

export const webhookDeliveryListSchema = listPageSchema(
  webhookDeliverySchema,
  'WebhookDeliveryList',
);

export const listWebhookDeliveriesQuerySchema = z.strictObject({
  limit: listLimitSchema,
  starting_after: z
    .guid('must be a delivery id')
    .optional()
    .describe('A delivery id of this endpoint: the page starts after it (newest first).'),
  status: z
    .enum(DELIVERY_STATUSES, { error: `must be one of ${DELIVERY_STATUSES.join(', ')}` })
    .optional(),
});

/** An RFC 3339 instant of a request (replay's bounds, GET /events' created filters). */
export const instant = z.iso.datetime({ offset: true, error: 'must be an RFC 3339 date-time' });

/** The fraction's digits after the milliseconds Date.parse reads, as a number of 6 digits. */
function belowMillis(value: string): number {
  const digits = /T[^.]*\.\d{3}(\d*)/.exec(value)?.[1] ?? '';
  return Number(digits.slice(0, 6).padEnd(6, '0'));
}

/** `a` is a later instant than `b`, to the nanosecond (Date.parse stops at the millisecond). */
export function isAfter(a: string, b: string): boolean {
  const ms = Date.parse(a) - Date.parse(b);
  return ms > 0 || (ms === 0 && belowMillis(a) > belowMillis(b));
}

export const replayBodySchema = z
  .strictObject({
    since: instant.describe('Events stored at or after this instant are re-sent, oldest first.'),
    until: instant
      .optional()
      .describe('Events stored before this instant only; must be after since (else 400).'),
  })
  .refine((body) => body.until === undefined || isAfter(body.until, body.since), {
    message: 'must be after since',
    path: ['until'],
  })
  .meta({ id: 'WebhookReplayRequest' });

export type ReplayBody = z.infer<typeof replayBodySchema>;

export const webhookReplaySchema = z
  .object({
    object: z.literal('webhook_replay'),
    replayed: z.int().describe('Events (re)queued to the endpoint by this request.'),
    has_more: z
      .boolean()
      .describe('More events match than WEBHOOK_REPLAY_MAX_EVENTS: replay again from next_since.'),
    next_since: z.iso
      .datetime()
      .nullable()
      .describe('The `since` of the next replay when has_more; null otherwise.'),
  })
  .meta({ id: 'WebhookReplay' });

export type WebhookReplayResource = z.infer<typeof webhookReplaySchema>;
