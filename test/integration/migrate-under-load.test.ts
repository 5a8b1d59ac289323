import path from 'node:path';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BENCH_TIER, defineTier } from '../../src/merchants/tier-repository.js';
import {
  applyMigrations,
  type MigrateResult,
} from '../../src/platform/database/migration-runner.js';
import { capturedLogger } from '../support/captured-logger.js';
import { createTestDatabase, type TestDatabase } from '../support/isolation.js';
import {
  quantile,
  report,
  steadyLoad,
  summarize,
  type LoadResult,
} from '../support/steady-load.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

/**
 * Issue 28: a migration applied while POSTs flow and a transaction holds `payments` waits and
 * retries instead of stalling the table. The fixture (test/fixtures/migrations/under-load) adds a
 * constraint NOT VALID (ACCESS EXCLUSIVE for a moment: the step that queues traffic while it
 * waits), validates it, and builds an index CONCURRENTLY, on a table of SEED_ROWS rows.
 */
const FIXTURE_DIR = path.resolve(import.meta.dirname, '../fixtures/migrations/under-load');
const SEED_ROWS = Number(process.env.MIGRATE_LOAD_ROWS ?? 100_000);
const RATE = Number(process.env.MIGRATE_LOAD_RATE ?? 40);
/** Short, so the test sees several retries; production's default is MIGRATION_LOCK_TIMEOUT_MS. */
const LOCK_TIMEOUT_MS = 500;
const RETRY_DELAY_MS = 250;
/** The blocker is held until the migration has retried this often (and at least BLOCK_MS). */
const RETRIES_WHILE_BLOCKED = 3;
const BLOCK_MS = 3_000;

let db: TestDatabase;
let api: TestApi;

beforeAll(async () => {
  db = await createTestDatabase();
  api = await startTestApi(db);
  await defineTier(db.pool, BENCH_TIER);
}, 120_000);
afterAll(async () => {
  await api.close();
  await db.drop();
});

/** SEED_ROWS payments of one merchant, written as the owner in one statement. */
async function seedPayments(merchantId: string): Promise<void> {
  await db.pool.query(
    `INSERT INTO payments (id, merchant_id, amount, currency, source, status, created_at, updated_at)
     SELECT gen_random_uuid(), $1, 100 + i % 5000, 'EUR', 'tok_visa', 'settled',
            now() - make_interval(secs => i), now() - make_interval(secs => i)
       FROM generate_series(1, $2::int) AS i`,
    [merchantId, SEED_ROWS],
  );
  await db.pool.query('ANALYZE payments');
}

async function waitFor(what: string, condition: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function p99(results: readonly LoadResult[]): number {
  return quantile(
    results.map((r) => r.latencyMs),
    0.99,
  );
}

describe('applying a migration under load (issue 28)', () => {
  it('when the blocker outlasts every retry, then the migration fails naming itself, 55P03, and nothing of it is applied', async () => {
    const blocker = await db.pool.connect();
    try {
      await blocker.query('BEGIN');
      await blocker.query('SELECT id FROM payments LIMIT 1 FOR SHARE');
      const { lines, logger } = capturedLogger();
      const failure = await applyMigrations(db.url, logger, {
        dir: FIXTURE_DIR,
        migrationsTable: 'pgmigrations_under_load',
        settings: { lockTimeoutMs: 200, statementTimeoutMs: 60_000, lockRetries: 1 },
        retryDelayMs: () => 50,
      }).catch((error: unknown) => error as Error & { code?: string });
      expect(failure).toMatchObject({
        code: '55P03',
        message: expect.stringMatching(
          /^0001_payments_source_not_blank was not granted its lock in 2 tries of lock_timeout 200 ms/,
        ) as unknown,
      });
      expect(lines.filter((line) => String(line.msg).includes('retrying'))).toHaveLength(1);
    } finally {
      await blocker.query('ROLLBACK');
      blocker.release();
    }
    const { rows } = await db.pool.query<{ applied: number; constraints: number }>(
      `SELECT (SELECT count(*)::int FROM pgmigrations_under_load) AS applied,
              (SELECT count(*)::int FROM pg_constraint WHERE conname = 'payments_source_not_blank') AS constraints`,
    );
    expect(rows[0]).toEqual({ applied: 0, constraints: 0 });
  });

  it('when a transaction holds payments, then the migration retries on lock_timeout, POSTs keep their p99 and never 5xx, and it completes once the blocker ends', async () => {
    const merchant = await api.merchant('Migrate under load', BENCH_TIER.name);
    await seedPayments(merchant.id);
    // Warm-up (pool connections, JIT), not measured: the baseline is the API at its steady pace.
    await steadyLoad(api, merchant.apiKey, {
      ratePerSecond: RATE,
      durationMs: 2_000,
      keyPrefix: 'warm',
    });
    const before = await steadyLoad(api, merchant.apiKey, {
      ratePerSecond: RATE,
      durationMs: 5_000,
      keyPrefix: 'before',
    });
    report(summarize('POST before the migration', before));

    const run = await migrateWhileBlocked(merchant.apiKey, 'during', LOCK_TIMEOUT_MS);
    report(summarize('POST during the migration', run.window));
    report(
      `migration: ${String(run.retries.length)} lock retries (lock_timeout ${String(LOCK_TIMEOUT_MS)} ms), blocker held ${String(run.heldMs)} ms, done ${String(run.doneAfterReleaseMs)} ms after it ended`,
    );

    expect(run.finished).toEqual({
      applied: [
        '0001_payments_source_not_blank',
        '0002_validate_payments_source_not_blank',
        '0003_payments_currency_created_index',
      ],
      lockRetries: run.retries.length,
    });
    expect(run.retries.length).toBeGreaterThanOrEqual(RETRIES_WHILE_BLOCKED);
    // One line per retry, each naming the migration that waited.
    expect(new Set(run.retries.map((line) => line.migration))).toEqual(
      new Set(['0001_payments_source_not_blank']),
    );
    const { rows } = await db.pool.query<{ validated: boolean; valid: boolean }>(
      `SELECT (SELECT convalidated FROM pg_constraint WHERE conname = 'payments_source_not_blank') AS validated,
              (SELECT indisvalid FROM pg_index WHERE indexrelid = 'payments_currency_created'::regclass) AS valid`,
    );
    expect(rows[0]).toEqual({ validated: true, valid: true });

    // Traffic: every POST answered 202; the p99 of those sent while the migration ran is bounded
    // by lock_timeout (the most a POST queued behind the waiting ALTER waits per attempt), not by
    // how long the blocker was held.
    expect(new Set([...before, ...run.results].map((r) => r.answer.status))).toEqual(
      new Set([202]),
    );
    expect(run.window.length).toBeGreaterThan(RATE);
    expect(p99(run.window)).toBeLessThan(p99(before) + 4 * LOCK_TIMEOUT_MS + 1_000);

    // The control, proving the bound is not vacuous: the same migration with lock_timeout
    // effectively off queues the POSTs behind it for as long as the blocker is held.
    await db.pool.query(`DROP TABLE pgmigrations_under_load;
      DROP INDEX payments_currency_created;
      ALTER TABLE payments DROP CONSTRAINT payments_source_not_blank`);
    const control = await migrateWhileBlocked(merchant.apiKey, 'control', 60_000);
    report(summarize('POST during the migration without lock_timeout (control)', control.window));
    expect(control.retries).toEqual([]);
    expect(p99(control.window)).toBeGreaterThan(BLOCK_MS / 2);
  }, 240_000);
});

/**
 * POSTs at RATE for 20 s; meanwhile a transaction that read payments (FOR SHARE: a ROW SHARE
 * lock, as a report or a long batch holds) stays open while the fixture migrates, until the
 * migration has retried RETRIES_WHILE_BLOCKED times (or, with no retries, BLOCK_MS have passed).
 */
async function migrateWhileBlocked(apiKey: string, keyPrefix: string, lockTimeoutMs: number) {
  const loadStarted = performance.now();
  const load = steadyLoad(api, apiKey, { ratePerSecond: RATE, durationMs: 20_000, keyPrefix });
  const blocker: pg.PoolClient = await db.pool.connect();
  await blocker.query('BEGIN');
  await blocker.query('SELECT id FROM payments LIMIT 1 FOR SHARE');
  const blockedAt = performance.now();

  const { lines, logger } = capturedLogger();
  const retries = () => lines.filter((line) => String(line.msg).includes('retrying'));
  const migrationStarted = performance.now() - loadStarted;
  let finished: MigrateResult | Error | undefined;
  const migration = applyMigrations(db.url, logger, {
    dir: FIXTURE_DIR,
    migrationsTable: 'pgmigrations_under_load',
    settings: { lockTimeoutMs, statementTimeoutMs: 60_000, lockRetries: 100 },
    retryDelayMs: () => RETRY_DELAY_MS,
  }).then(
    (result) => (finished = result),
    (error: unknown) => (finished = error as Error),
  );
  const enoughRetries = lockTimeoutMs < BLOCK_MS ? RETRIES_WHILE_BLOCKED : 0;
  await waitFor(
    'the migration to wait while blocked',
    () => retries().length >= enoughRetries && performance.now() - blockedAt >= BLOCK_MS,
    60_000,
  );
  // Still waiting, not done: the blocker is what holds it.
  expect(finished).toBeUndefined();
  await blocker.query('COMMIT');
  blocker.release();
  const releasedAt = performance.now() - loadStarted;
  await migration;
  const migrationEnded = performance.now() - loadStarted;
  const results = await load;
  return {
    finished,
    retries: retries(),
    results,
    window: results.filter((r) => r.sentAtMs >= migrationStarted && r.sentAtMs <= migrationEnded),
    heldMs: Math.round(releasedAt - migrationStarted),
    doneAfterReleaseMs: Math.round(migrationEnded - releasedAt),
  };
}
