import { describe, expect, it } from 'vitest';
import { ApiError } from '../../src/http/api-error.js';
import { toApiError } from '../../src/http/error-handler.js';
import type { DomainError } from '../../src/platform/errors/domain-error.js';
import {
  IdempotencyCacheUnavailable,
  IdempotencyKeyInUse,
  IdempotencyKeyReused,
} from '../../src/idempotency/idempotency-errors.js';
import { PaymentDatabaseUnavailable } from '../../src/idempotency/database-guard.js';

describe('toApiError, given a domain error', () => {
  it('when the key is reused, then 422 idempotency_key_reused without Retry-After', () => {
    const mapped = toApiError(new IdempotencyKeyReused(), 9);
    expect(mapped.status).toBe(422);
    expect(mapped.toProblem()).toMatchObject({ code: 'idempotency_key_reused', status: 422 });
    expect(mapped.options.headers).toBeUndefined();
  });

  it('when the key is in use, then 409 with the error own Retry-After', () => {
    const mapped = toApiError(new IdempotencyKeyInUse(3), 9);
    expect(mapped.toProblem()).toMatchObject({ code: 'idempotency_key_in_use', status: 409 });
    expect(mapped.options.headers).toEqual({ 'Retry-After': '3' });
  });

  it.each<[string, DomainError]>([
    ['cache', new IdempotencyCacheUnavailable(2, new Error('down'))],
    ['database', new PaymentDatabaseUnavailable(2, new Error('down'))],
  ])(
    'when the %s is unavailable, then 503 with Retry-After and the message as detail',
    (_, error) => {
      const mapped = toApiError(error, 9);
      expect(mapped.toProblem()).toMatchObject({
        code: 'service_unavailable',
        status: 503,
        detail: error.message,
      });
      expect(mapped.options.headers).toEqual({ 'Retry-After': '2' });
      expect(mapped.options.cause).toBe(error);
    },
  );

  it('when the error is an ApiError or unknown, then it is kept or becomes 500', () => {
    const api = new ApiError('not_found', 'nothing here');
    expect(toApiError(api, 9)).toBe(api);
    expect(toApiError(new Error('bug'), 9).toProblem()).toMatchObject({
      code: 'internal_error',
      status: 500,
    });
  });
});
