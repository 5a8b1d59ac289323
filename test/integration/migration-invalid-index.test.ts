import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMerchant } from '../../src/merchants/merchant-repository.js';
import { refuseInvalidIndexesSql } from '../../src/platform/database/invalid-indexes.js';
import { applyMigrations } from '../../src/platform/database/migration-runner.js';
import { capturedLogger } from '../support/captured-logger.js';
import { createTestDatabase, type TestDatabase } from '../support/isolation.js';

/**
 * Issue 39 item 4 (DESIGN 125): a `-- migrate: no-transaction` file whose CREATE INDEX
 * CONCURRENTLY fails part-way leaves an INVALID index. `IF NOT EXISTS` would skip it on the next
 * run and the file would be recorded as applied with a useless index; the runner drops what the
 * file left invalid before running it again, and never records a file whose index is invalid.
 */
const FIXTURES = path.resolve(import.meta.dirname, '../fixtures/migrations');

let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db.drop();
});

async function indexState(name: string): Promise<{ valid: boolean } | undefined> {
  const { rows } = await db.pool.query<{ valid: boolean }>(
    `SELECT i.indisvalid AS valid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
      WHERE c.relname = $1`,
    [name],
  );
  return rows[0];
}

async function recorded(table: string): Promise<string[]> {
  const { rows } = await db.pool.query<{ name: string }>(`SELECT name FROM ${table}`);
  return rows.map((row) => row.name);
}

async function waitFor(what: string, condition: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const dropLine = (lines: Record<string, unknown>[]) =>
  lines.filter((line) => String(line.msg).startsWith('dropping an INVALID index'));

describe('a no-transaction migration that leaves an INVALID index', () => {
  it('when its build times out waiting for a writer, then the retry drops the invalid index and builds it again before recording the file', async () => {
    const table = 'pgmigrations_invalid_index';
    const blocker = await db.pool.connect();
    const { lines, logger } = capturedLogger();
    try {
      // A writer's open transaction: CREATE INDEX CONCURRENTLY creates its (invalid) index, then
      // waits for it past lock_timeout (55P03), and the runner retries.
      await blocker.query('BEGIN');
      await blocker.query('LOCK TABLE payments IN ROW EXCLUSIVE MODE');
      const run = applyMigrations(db.url, logger, {
        dir: path.join(FIXTURES, 'invalid-index'),
        migrationsTable: table,
        settings: { lockTimeoutMs: 200, statementTimeoutMs: 60_000, lockRetries: 50 },
        retryDelayMs: () => 100,
      });
      let settled = false;
      void run.finally(() => (settled = true)).catch(() => undefined);
      const retries = () => lines.filter((line) => String(line.msg).includes('retrying')).length;
      // The retry after the timed-out build: without the fix it skips the INVALID index (IF NOT
      // EXISTS) and records the file at once; with it, it waits for the writer to drop the index.
      await waitFor('two lock retries or the end', () => retries() >= 2 || settled, 30_000);
      // While the writer holds on, nothing is recorded.
      expect(await recorded(table)).toEqual([]);
      await blocker.query('ROLLBACK');
      const result = await run;
      expect(result.applied).toEqual(['0001_payments_amount_index']);
    } finally {
      await blocker.query('ROLLBACK').catch(() => undefined);
      blocker.release();
    }
    expect(await indexState('payments_fixture_amount')).toEqual({ valid: true });
    expect(await recorded(table)).toEqual(['0001_payments_amount_index']);
    expect(dropLine(lines)[0]).toMatchObject({
      migration: '0001_payments_amount_index',
      index: 'payments_fixture_amount',
    });
  });

  it('when a unique build fails over duplicate rows, then the file is not recorded, and once the rows are fixed the next run rebuilds the index', async () => {
    const table = 'pgmigrations_invalid_unique';
    const dir = path.join(FIXTURES, 'invalid-unique-index');
    const merchant = await createMerchant(db.pool, 'Invalid index');
    const insert = `INSERT INTO payments (id, merchant_id, amount, currency, source, status, created_at, updated_at)
                    VALUES (gen_random_uuid(), $1, 4242, 'EUR', 'tok_visa', 'settled', now(), now())
                    RETURNING id`;
    await db.pool.query(insert, [merchant.id]);
    const duplicate = await db.pool.query<{ id: string }>(insert, [merchant.id]);

    // The statement sent last before a file is recorded refuses it while the index is invalid.
    const refuse = refuseInvalidIndexesSql(['payments_fixture_amount_unique'], '0001_x');
    const first = capturedLogger();
    const failure = await applyMigrations(db.url, first.logger, {
      dir,
      migrationsTable: table,
    }).catch((error: unknown) => error as { code?: string });
    expect(failure).toMatchObject({ code: '23505' });
    expect(await indexState('payments_fixture_amount_unique')).toEqual({ valid: false });
    expect(await recorded(table)).toEqual([]);
    await expect(db.pool.query(refuse)).rejects.toMatchObject({
      code: '55000',
      message: expect.stringContaining(
        '0001_x left INVALID index(es) payments_fixture_amount_unique',
      ) as unknown,
    });

    await db.pool.query('DELETE FROM payments WHERE id = $1', [duplicate.rows[0]?.id]);
    const second = capturedLogger();
    const result = await applyMigrations(db.url, second.logger, { dir, migrationsTable: table });
    expect(result.applied).toEqual(['0001_payments_amount_unique']);
    expect(await indexState('payments_fixture_amount_unique')).toEqual({ valid: true });
    expect(await recorded(table)).toEqual(['0001_payments_amount_unique']);
    expect(dropLine(second.lines)).toHaveLength(1);
    await db.pool.query(refuse);
  });
});
