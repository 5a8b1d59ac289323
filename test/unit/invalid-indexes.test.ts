import { describe, expect, it } from 'vitest';
import {
  createdIndexNames,
  refuseInvalidIndexesSql,
} from '../../src/platform/database/invalid-indexes.js';

describe('the indexes a no-transaction migration creates (DESIGN 125)', () => {
  it('when statements create indexes, then their names are found as Postgres folds them', () => {
    expect(
      createdIndexNames([
        'DROP INDEX CONCURRENTLY IF EXISTS gone',
        'CREATE INDEX CONCURRENTLY IF NOT EXISTS Refund_Jobs_Due\n  ON refund_jobs (next_attempt_at)',
        'create unique index concurrently public."Mixed ""Case"""  on t (a)',
        'CREATE INDEX plain ON t (b)',
        'CREATE INDEX CONCURRENTLY ON t (c)',
        'CREATE INDEX CONCURRENTLY IF NOT EXISTS plain ON t (b)',
        'ALTER TABLE t ADD COLUMN d int',
      ]),
    ).toEqual(['refund_jobs_due', 'Mixed "Case"', 'plain']);
  });

  it('when the refusal is built, then it names the migration and quotes every index as a literal', () => {
    const sql = refuseInvalidIndexesSql(["it's"], '0042_x');
    expect(sql).toContain("c.relname IN ('it''s')");
    expect(sql).toContain("ERRCODE = '55000'");
    expect(sql).toContain('0042_x left INVALID index(es) %s: not recorded');
  });
});
