import { z } from 'zod';
import { listLimitSchema, listPageSchema } from '../http/list-page.js';
import { MAX_AMOUNT, SUPPORTED_CURRENCIES } from './money.js';

/**
 * The request and response schemas of the payments API. Validation and the OpenAPI document
 * both come from these; there is no hand-written copy of the contract.
 */

/** The acquirer simulator's test tokens (BRIEF section 6). */
export const SOURCES = [
  'tok_visa',
  'tok_decline',
  'tok_unavailable',
  'tok_timeout',
  ...(['1', '2', '3', '4', '5', '6', '7', '8', '9'] as const).map(
    (n) => `tok_transient_${n}` as const,
  ),
  // Charge approved; drive the refund path (refunds/refund-acquirer-behaviour in the simulator).
  'tok_refund_decline',
  'tok_refund_unavailable',
  ...(['1', '2', '3', '4', '5', '6', '7', '8', '9'] as const).map(
    (n) => `tok_refund_transient_${n}` as const,
  ),
] as const;

export const MAX_METADATA_KEYS = 20;

/**
 * Text Postgres can store: no NUL (text and jsonb refuse it). The pattern goes into the OpenAPI
 * document as is.
 */
// eslint-disable-next-line no-control-regex -- NUL is exactly what this pattern excludes
const NO_NUL = /^[^\u0000]*$/;

/**
 * Unicode text (I-JSON, RFC 7493): no unpaired surrogate, which Postgres would store as U+FFFD or
 * refuse. With the `u` flag a valid pair is one code point outside the class and a lone surrogate
 * one inside it. Not in the document: JSON Schema validators built on Rust or Go regexes cannot
 * compile surrogate ranges, so the document says it in words.
 */
const NO_LONE_SURROGATE = /^[^\uD800-\uDFFF]*$/u;

/** Characters as Postgres and JSON Schema count them (code points, not UTF-16 units). */
function codePoints(value: string): number {
  let count = 0;
  for (let i = 0; i < value.length; i++) {
    const unit = value.charCodeAt(i);
    if (unit < 0xd800 || unit > 0xdbff) count++;
  }
  return count;
}

/**
 * A string of `min` to `max` characters without NUL or unpaired surrogates. The bounds count code
 * points like the database's length() and the document's minLength/maxLength, so an emoji is one.
 * `noun` starts each message ("keys must ..."); without it the message starts with "must".
 */
function text(min: number, max: number, noun?: string) {
  const must = noun ? `${noun} must` : 'must';
  let schema = z
    .string({ error: noun ? `${noun} must be strings` : 'must be a string' })
    .regex(NO_NUL, `${must} not contain NUL characters`)
    .refine((value) => NO_LONE_SURROGATE.test(value), `${must} not contain unpaired surrogates`);
  if (min > 0) schema = schema.refine((value) => codePoints(value) >= min, `${must} not be empty`);
  return schema
    .refine((value) => codePoints(value) <= max, `${must} be at most ${max} characters`)
    .meta({
      ...(min > 0 ? { minLength: min } : {}),
      maxLength: max,
      description: 'Unicode text (RFC 7493): no NUL, no unpaired surrogates.',
    });
}

/**
 * Keys an object literal treats specially. `__proto__` cannot be kept (assigning it sets the
 * prototype, so the key would vanish from the stored metadata); it is refused, never dropped.
 */
const RESERVED_METADATA_KEY = /^(?!__proto__$)/;

export const createPaymentBodySchema = z
  .strictObject({
    amount: z
      .number()
      .int('must be an integer number of minor units')
      .min(1, 'must be at least 1')
      .max(MAX_AMOUNT, `must be at most ${MAX_AMOUNT}`)
      .describe('Amount in minor units of the currency (cents for USD).'),
    currency: z.enum(SUPPORTED_CURRENCIES, {
      error: `must be one of ${SUPPORTED_CURRENCIES.join(', ')} (ISO 4217, uppercase)`,
    }),
    source: z
      .enum(SOURCES, { error: `must be one of ${SOURCES.join(', ')}` })
      .default('tok_visa')
      .describe('Payment source token; test tokens drive the acquirer simulator.'),
    description: text(0, 500).optional(),
    metadata: z
      .record(
        text(1, 40, 'keys').regex(RESERVED_METADATA_KEY, 'keys must not be __proto__'),
        text(0, 500, 'values'),
      )
      .refine((value) => Object.keys(value).length <= MAX_METADATA_KEYS, {
        message: `must have at most ${MAX_METADATA_KEYS} keys`,
      })
      .default({})
      .meta({ maxProperties: MAX_METADATA_KEYS }),
  })
  .meta({ id: 'CreatePaymentRequest' });

export type CreatePaymentBody = z.infer<typeof createPaymentBodySchema>;

export const PAYMENT_STATUSES = ['pending', 'processing', 'settled', 'failed'] as const;

export const paymentSchema = z
  .object({
    id: z.uuid(),
    object: z.literal('payment'),
    amount: z.int(),
    currency: z.enum(SUPPORTED_CURRENCIES),
    status: z.enum(PAYMENT_STATUSES),
    source: z.enum(SOURCES),
    description: z.string().nullable(),
    metadata: z.record(z.string(), z.string()),
    failure_code: z.string().optional().describe('Present when status is failed.'),
    amount_refunded: z
      .int()
      .optional()
      .describe(
        'Sum of the refunds that are not failed (pending or succeeded), in minor units. Present on reads and result events; absent from the 202 of POST /payments and `payment.created`.',
      ),
    refunded: z
      .boolean()
      .optional()
      .describe('True when amount_refunded equals amount. Present with amount_refunded.'),
    created_at: z.iso.datetime(),
  })
  .meta({ id: 'Payment' });

export type PaymentResource = z.infer<typeof paymentSchema>;

export const paymentListSchema = listPageSchema(paymentSchema, 'PaymentList');

export const listPaymentsQuerySchema = z.strictObject({
  limit: listLimitSchema,
  // Any 8-4-4-4-12 hex id (what Postgres' uuid type and the document's format: uuid accept);
  // z.uuid() would refuse ids whose version nibble is not 1-8.
  starting_after: z
    .guid('must be a payment id')
    .optional()
    .describe('A payment id: the page starts after it (newest first).'),
});

export const problemSchema = z
  .object({
    type: z.string(),
    title: z.string(),
    status: z.int(),
    detail: z.string(),
    code: z.string(),
    errors: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
  })
  .meta({ id: 'Problem' });
