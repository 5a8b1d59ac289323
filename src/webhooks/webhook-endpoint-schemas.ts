import { z } from 'zod';
import { codePoints } from '../http/code-points.js';
import { listLimitSchema, listPageSchema } from '../http/list-page.js';
import { WEBHOOK_EVENT_TYPES } from './webhook-fanout.js';

/** The request and response schemas of /webhook_endpoints (validation and OpenAPI). */

export const MAX_WEBHOOK_URL_LENGTH = 2048;
export const MAX_WEBHOOK_DESCRIPTION_LENGTH = 500;
export const DISABLED_REASONS = ['merchant', 'gone', 'failing'] as const;

// eslint-disable-next-line no-control-regex -- NUL is exactly what this pattern excludes
const NO_NUL = /^[^\u0000]*$/;

/** No unpaired surrogate (I-JSON, RFC 7493): Postgres would store U+FFFD instead. */
const NO_LONE_SURROGATE = /^[^\uD800-\uDFFF]*$/u;

/**
 * What a webhook URL may look like, stated in the document: http(s)://, then no space and no
 * control character (C0, DEL, C1). assertUrlAllowed checks it, with what a pattern cannot say.
 */
const URL_PATTERN_SOURCE = '^[Hh][Tt][Tt][Pp][Ss]?://[^\\x00-\\x20\\x7f-\\x9f]+$';
export const WEBHOOK_URL_PATTERN = new RegExp(URL_PATTERN_SOURCE);

/**
 * The URL as sent: a string. Its form (the pattern, length, userinfo) and where it resolves are
 * judged after validation (422 webhook_url_not_allowed): the document states the form, and that
 * anything else is 422.
 */
const urlField = z
  .string({ error: 'must be a string' })
  .min(1, 'must not be empty')
  .meta({
    maxLength: MAX_WEBHOOK_URL_LENGTH,
    format: 'uri',
    pattern: URL_PATTERN_SOURCE,
  })
  .describe(
    'http(s) URL without spaces, control characters, user name or password, at most 2048 ' +
      'characters, resolving to public addresses only (unless the operator allows a network). ' +
      'Anything else is 422 webhook_url_not_allowed.',
  );

/** Every event type but "*": the list form of enabled_events. */
const EVENT_TYPE_LIST = [...WEBHOOK_EVENT_TYPES];

/**
 * ["*"] alone, or a list of distinct event types. Validated with a message per rule (the paths
 * tests and clients read); the document states the same as anyOf with uniqueItems.
 */
const eventTypesField = z
  .array(z.enum([...WEBHOOK_EVENT_TYPES, '*'], { error: 'must be an event type or *' }), {
    error: 'must be an array',
  })
  .min(1, 'must list at least one event type')
  .max(WEBHOOK_EVENT_TYPES.length + 1, 'must not repeat event types')
  .refine((types) => new Set(types).size === types.length, 'must not repeat event types')
  .refine(
    (types) => !types.includes('*') || types.length === 1,
    'must be ["*"] alone or a list of event types',
  )
  .meta({
    uniqueItems: true,
    anyOf: [
      { items: { const: '*' }, maxItems: 1 },
      { items: { enum: EVENT_TYPE_LIST }, maxItems: EVENT_TYPE_LIST.length },
    ],
  })
  .describe(
    `Event types to receive (${WEBHOOK_EVENT_TYPES.join(', ')}), each once, or ["*"] alone for all.`,
  );

/** At most 500 characters counted as the document and Postgres count them (code points). */
const descriptionField = z
  .string({ error: 'must be a string' })
  .regex(NO_NUL, 'must not contain NUL characters')
  .refine((value) => NO_LONE_SURROGATE.test(value), 'must not contain unpaired surrogates')
  .refine(
    (value) => codePoints(value) <= MAX_WEBHOOK_DESCRIPTION_LENGTH,
    `must be at most ${MAX_WEBHOOK_DESCRIPTION_LENGTH} characters`,
  )
  .meta({ maxLength: MAX_WEBHOOK_DESCRIPTION_LENGTH });

export const createWebhookEndpointBodySchema = z
  .strictObject({
    url: urlField,
    enabled_events: eventTypesField,
    description: descriptionField.optional(),
    disabled: z.boolean({ error: 'must be a boolean' }).default(false),
  })
  .meta({ id: 'CreateWebhookEndpointRequest' });

export type CreateWebhookEndpointBody = z.infer<typeof createWebhookEndpointBodySchema>;

export const updateWebhookEndpointBodySchema = z
  .strictObject({
    url: urlField.optional(),
    enabled_events: eventTypesField.optional(),
    description: descriptionField.nullable().optional().describe('null clears it.'),
    disabled: z
      .boolean({ error: 'must be a boolean' })
      .optional()
      .describe('false re-enables the endpoint (and clears disabled_reason and failing_since).'),
  })
  .meta({ id: 'UpdateWebhookEndpointRequest' });

export type UpdateWebhookEndpointBody = z.infer<typeof updateWebhookEndpointBodySchema>;

export const rotateSecretBodySchema = z
  .strictObject({
    expires_in_seconds: z
      .int({ error: 'must be an integer' })
      .min(0, 'must be at least 0')
      .max(30 * 86_400, 'must be at most 2592000 (30 days)')
      .optional()
      .describe(
        'How long the current secret keeps signing; WEBHOOK_SECRET_GRACE_SECONDS if left out.',
      ),
  })
  .meta({ id: 'RotateWebhookSecretRequest' });

export const webhookEndpointSchema = z
  .object({
    id: z.uuid(),
    object: z.literal('webhook_endpoint'),
    url: z.string(),
    enabled_events: z.array(z.enum([...WEBHOOK_EVENT_TYPES, '*'])),
    description: z.string().nullable(),
    disabled: z.boolean(),
    disabled_reason: z
      .enum(DISABLED_REASONS)
      .nullable()
      .describe(
        'merchant (PATCH disabled), gone (answered 410), failing (no 2xx for the whole retry schedule).',
      ),
    disabled_at: z.iso.datetime().nullable(),
    failing_since: z.iso
      .datetime()
      .nullable()
      .describe('The first failed attempt since the last 2xx; null while deliveries succeed.'),
    created_at: z.iso.datetime(),
    updated_at: z.iso.datetime(),
  })
  .meta({ id: 'WebhookEndpoint' });

export type WebhookEndpointResource = z.infer<typeof webhookEndpointSchema>;

export const SECRET_DESCRIPTION =
  'The signing secret (whsec_ + base64 of 32 bytes), shown only in this answer.';

export const createdWebhookEndpointSchema = webhookEndpointSchema
  .extend({
    secret: z
      .string()
      .nullable()
      .describe(
        `${SECRET_DESCRIPTION} A replay (same Idempotency-Key) shows it again while it is the endpoint's current secret; null once it was rotated or the endpoint deleted.`,
      ),
  })
  .meta({ id: 'CreatedWebhookEndpoint' });

export const rotatedSecretSchema = z
  .object({
    secret: z.string().describe(SECRET_DESCRIPTION),
    previous_secret_expires_at: z.iso
      .datetime()
      .nullable()
      .describe('Until then the previous secret signs deliveries too.'),
  })
  .meta({ id: 'RotatedWebhookSecret' });

export const deletedWebhookEndpointSchema = z
  .object({ id: z.uuid(), object: z.literal('webhook_endpoint'), deleted: z.literal(true) })
  .meta({ id: 'DeletedWebhookEndpoint' });

export const webhookEndpointListSchema = listPageSchema(
  webhookEndpointSchema,
  'WebhookEndpointList',
);

export const listWebhookEndpointsQuerySchema = z.strictObject({
  limit: listLimitSchema,
  starting_after: z
    .guid('must be a webhook endpoint id')
    .optional()
    .describe('A webhook endpoint id: the page starts after it (oldest first).'),
});
