import { z } from 'zod';
import { listLimitSchema, listPageSchema } from '../http/list-page.js';
import { metadataSchema, unicodeText } from '../http/metadata-schema.js';
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
  // Authorized (capture_method manual), its capture declined: capture_declined (issue 40).
  'tok_capture_decline',
  // Charge approved; drive the refund path (refunds/refund-acquirer-behaviour in the simulator).
  'tok_refund_decline',
  'tok_refund_unavailable',
  ...(['1', '2', '3', '4', '5', '6', '7', '8', '9'] as const).map(
    (n) => `tok_refund_transient_${n}` as const,
  ),
] as const;

export const CAPTURE_METHODS = ['automatic', 'manual'] as const;

/** Why a manual payment was canceled; `expired` only by the expiry job (never sent). */
export const CANCELLATION_REASONS = [
  'requested_by_customer',
  'duplicate',
  'fraudulent',
  'abandoned',
] as const;

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
    description: unicodeText(0, 500).optional(),
    metadata: metadataSchema.default({}),
    capture_method: z
      .enum(CAPTURE_METHODS, { error: `must be one of ${CAPTURE_METHODS.join(', ')}` })
      .optional()
      .describe(
        '`automatic` (the default): charged in one step. `manual`: authorized (a hold), then captured with POST /payments/{id}/capture or released with POST /payments/{id}/cancel before `capture_before`.',
      ),
  })
  .meta({ id: 'CreatePaymentRequest' });

export type CreatePaymentBody = z.infer<typeof createPaymentBodySchema>;

export const PAYMENT_STATUSES = [
  'pending',
  'processing',
  'requires_capture',
  'settled',
  'failed',
  'canceled',
] as const;

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
    capture_method: z
      .enum(CAPTURE_METHODS)
      .optional()
      .describe('Present (`manual`) on manual payments only; absent means automatic.'),
    amount_capturable: z
      .int()
      .optional()
      .describe(
        'Manual payments: what a capture may take now (the amount while requires_capture, else 0).',
      ),
    capture_before: z.iso
      .datetime()
      .optional()
      .describe(
        'Manual payments, once authorized: the hold is voided and the payment canceled (expired) if not captured by then.',
      ),
    amount_captured: z
      .int()
      .optional()
      .describe(
        'Manual payments, once captured: the amount taken; the rest of the hold was released. Refunds are against it.',
      ),
    canceled_at: z.iso.datetime().optional().describe('Present when status is canceled.'),
    cancellation_reason: z
      .enum([...CANCELLATION_REASONS, 'expired'])
      .nullable()
      .optional()
      .describe('Present when status is canceled: the reason given, or `expired`.'),
    created_at: z.iso.datetime(),
  })
  .meta({ id: 'Payment' });

export const capturePaymentBodySchema = z
  .strictObject({
    amount_to_capture: z
      .number()
      .int('must be an integer number of minor units')
      .min(1, 'must be at least 1')
      .max(MAX_AMOUNT, `must be at most ${MAX_AMOUNT}`)
      .optional()
      .describe(
        'At most the authorized amount (the default); the rest of the hold is released. One capture per payment.',
      ),
  })
  .meta({ id: 'CapturePaymentRequest' });

export type CapturePaymentBody = z.infer<typeof capturePaymentBodySchema>;

export const cancelPaymentBodySchema = z
  .strictObject({
    cancellation_reason: z
      .enum(CANCELLATION_REASONS, { error: `must be one of ${CANCELLATION_REASONS.join(', ')}` })
      .optional(),
  })
  .meta({ id: 'CancelPaymentRequest' });

export type CancelPaymentBody = z.infer<typeof cancelPaymentBodySchema>;

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
