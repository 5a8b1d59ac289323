import { z } from 'zod';
import { listLimitSchema, listPageSchema } from '../http/list-page.js';
import { metadataSchema } from '../http/metadata-schema.js';
import { MAX_AMOUNT, SUPPORTED_CURRENCIES } from '../payments/money.js';

/** The request and response schemas of the refunds API (validation and OpenAPI). */

export const REFUND_REASONS = ['duplicate', 'fraudulent', 'requested_by_customer'] as const;
export const REFUND_STATUSES = ['pending', 'succeeded', 'failed'] as const;

export const createRefundBodySchema = z
  .strictObject({
    amount: z
      .number()
      .int('must be an integer number of minor units')
      .min(1, 'must be at least 1')
      .max(MAX_AMOUNT, `must be at most ${MAX_AMOUNT}`)
      .optional()
      .describe('Amount to refund in minor units; defaults to what is left of the payment.'),
    reason: z
      .enum(REFUND_REASONS, { error: `must be one of ${REFUND_REASONS.join(', ')}` })
      .optional(),
    metadata: metadataSchema.optional(),
  })
  .meta({ id: 'CreateRefundRequest' });

export type CreateRefundBody = z.infer<typeof createRefundBodySchema>;

export const refundSchema = z
  .object({
    id: z.uuid(),
    object: z.literal('refund'),
    payment_id: z.uuid(),
    amount: z.int(),
    currency: z.enum(SUPPORTED_CURRENCIES),
    status: z.enum(REFUND_STATUSES),
    reason: z.enum(REFUND_REASONS).nullable(),
    metadata: z.record(z.string(), z.string()),
    failure_code: z.string().optional().describe('Present when status is failed.'),
    created_at: z.iso.datetime(),
  })
  .meta({ id: 'Refund' });

export type RefundResource = z.infer<typeof refundSchema>;

export const refundListSchema = listPageSchema(refundSchema, 'RefundList');

export const listRefundsQuerySchema = z.strictObject({
  limit: listLimitSchema,
  // Any 8-4-4-4-12 hex id, like the document's format: uuid (see listPaymentsQuerySchema).
  starting_after: z
    .guid('must be a refund id')
    .optional()
    .describe('A refund id: the page starts after it (newest first).'),
});
