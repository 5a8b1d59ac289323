import type { z } from 'zod';
import { ApiError } from './api-error.js';

/**
 * The parsed input, or 400 validation_failed listing each invalid field at its path (an unknown
 * field at its own path, which is what a client needs to fix).
 */
export function validate<S extends z.ZodType>(schema: S, input: unknown): z.output<S> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const errors = result.error.issues.flatMap((issue) => {
    const base = issue.path.map(String).join('.');
    if (issue.code === 'unrecognized_keys') {
      return issue.keys.map((key) => ({
        path: base ? `${base}.${key}` : key,
        message: 'is not a recognized field',
      }));
    }
    // A bad record key: the inner issue says what is wrong with it.
    const message =
      issue.code === 'invalid_key' ? (issue.issues[0]?.message ?? issue.message) : issue.message;
    return [{ path: base || '(body)', message }];
  });
  throw new ApiError('validation_failed', 'The request has invalid fields; see errors.', {
    errors,
  });
}
