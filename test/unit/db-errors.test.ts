import { describe, expect, it } from 'vitest';
import { isDatabaseUnavailable } from '../../src/platform/database/db-errors.js';

const pgError = (code: string, message = 'error'): Error =>
  Object.assign(new Error(message), { code });

describe('isDatabaseUnavailable: 503 or 500', () => {
  it('when Postgres cannot be reached, is shutting down or is read-only mid-failover, then it is unavailable (503)', () => {
    for (const code of ['ECONNREFUSED', '08006', '57P01', '53300', '25006']) {
      expect(isDatabaseUnavailable(pgError(code)), code).toBe(true);
    }
    expect(isDatabaseUnavailable(new Error('Connection terminated unexpectedly'))).toBe(true);
  });

  it('when the statement itself is wrong, then it is a bug (500)', () => {
    for (const code of ['23505', '42601', '22P02', '25P02']) {
      expect(isDatabaseUnavailable(pgError(code)), code).toBe(false);
    }
    expect(isDatabaseUnavailable('not an error')).toBe(false);
  });
});
