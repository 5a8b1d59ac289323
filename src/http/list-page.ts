import { z } from 'zod';

/** The page shape and the `limit` parameter every list route shares (payments, refunds, webhooks). */

/** A page of a list route: `{ object: 'list', data, has_more }`, named `id` in the document. */
export function listPageSchema<T extends z.ZodType>(item: T, id: string) {
  return z
    .object({ object: z.literal('list'), data: z.array(item), has_more: z.boolean() })
    .meta({ id });
}

export const MAX_LIST_LIMIT = 100;

/** The `limit` query parameter of every list route (a query string, parsed to an integer). */
export const listLimitSchema = z
  .string()
  .regex(/^\d+$/, 'must be an integer')
  .transform(Number)
  .pipe(
    z.int().min(1, 'must be at least 1').max(MAX_LIST_LIMIT, `must be at most ${MAX_LIST_LIMIT}`),
  )
  .default(10)
  .describe(`Page size, 1-${MAX_LIST_LIMIT}.`);
