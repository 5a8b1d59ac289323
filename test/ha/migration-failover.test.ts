import { randomBytes } from 'node:crypto';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyMigrations } from '../../src/platform/database/migration-runner.js';
import { createLogger } from '../../src/platform/telemetry/logger.js';
import {
  createScratchDatabase,
  type ScratchDatabase,
} from '../../tools/support/scratch-database.js';
import { capturedLogger } from '../support/captured-logger.js';
import { haPostgresPrimaryPid, haStack } from '../support/ha-stack.js';

/**
 * Issue 39 item 4 (DESIGN 125): a no-transaction migration is interrupted by a primary kill
 * mid-file (its CREATE INDEX CONCURRENTLY has committed the INVALID index entry, replicated to
 * the synchronous standby, and waits for a writer); after the promote, the rerun drops that
 * index, builds it, and records the file once.
 */
const FIXTURE_DIR = path.resolve(import.meta.dirname, '../fixtures/migrations/invalid-index');
const TABLE = 'pgmigrations_ha_kill';
const INDEX = 'payments_fixture_amount';

const made: { database?: ScratchDatabase } = {};

beforeAll(async () => {
  const serverUrl = process.env.DATABASE_URL;
  if (serverUrl === undefined) throw new Error('DATABASE_URL is unset: run via npm run test:ha');
  await haStack(['status', 'postgres'], 30_000);
  made.database = await createScratchDatabase(
    serverUrl,
    `ha_migrate_${randomBytes(5).toString('hex')}`,
  );
  await applyMigrations(made.database.url, createLogger({ LOG_LEVEL: 'warn', LOG_FORMAT: 'json' }));
});

afterAll(async () => {
  await haStack(['start', 'postgres'], 300_000);
  await haStack(['status', 'postgres'], 30_000);
  await made.database?.drop();
});

/** One query on a connection of its own (pools do not outlive a primary). */
async function query<T extends pg.QueryResultRow>(sql: string, values: unknown[] = []) {
  const client = new pg.Client({
    connectionString: made.database?.url,
    connectionTimeoutMillis: 10_000,
    query_timeout: 30_000,
  });
  await client.connect();
  try {
    return (await client.query<T>(sql, values)).rows;
  } finally {
    await client.end();
  }
}

const indexValid = async () =>
  (
    await query<{ valid: boolean }>(
      `SELECT i.indisvalid AS valid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
        WHERE c.relname = $1`,
      [INDEX],
    )
  )[0]?.valid;

describe('a migration interrupted by a primary kill (issue 39)', () => {
  it('when the primary dies mid-build and the standby is promoted, then the rerun rebuilds the INVALID index and records the file once', async () => {
    const url = made.database?.url ?? '';
    const blocker = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000 });
    blocker.on('error', () => undefined); // it dies with the primary
    await blocker.connect();
    await blocker.query('BEGIN');
    await blocker.query('LOCK TABLE payments IN ROW EXCLUSIVE MODE');
    // Waits for the blocker (long lock_timeout) after committing the invalid index entry.
    const first = applyMigrations(url, createLogger({ LOG_LEVEL: 'silent', LOG_FORMAT: 'json' }), {
      dir: FIXTURE_DIR,
      migrationsTable: TABLE,
      settings: { lockTimeoutMs: 120_000, statementTimeoutMs: 180_000, lockRetries: 0 },
      timeouts: { connectMs: 10_000, queryMs: 180_000 },
    }).then(
      () => 'applied',
      (error: unknown) => error,
    );
    const deadline = Date.now() + 60_000;
    while ((await indexValid()) !== false) {
      if (Date.now() > deadline) throw new Error(`no INVALID ${INDEX} within 60 s`);
      await new Promise((r) => setTimeout(r, 100));
    }

    process.kill(await haPostgresPrimaryPid(), 'SIGKILL');
    expect(await first).not.toBe('applied');
    await haStack(['promote', 'postgres'], 120_000);
    await blocker.end().catch(() => undefined);

    // The promoted node has the interrupted build's INVALID index, and the file is not recorded.
    expect(await indexValid()).toBe(false);
    expect(await query(`SELECT name FROM ${TABLE}`)).toEqual([]);
    const { lines, logger } = capturedLogger();
    const rerun = await applyMigrations(url, logger, { dir: FIXTURE_DIR, migrationsTable: TABLE });
    expect(rerun.applied).toEqual(['0001_payments_amount_index']);
    expect(await indexValid()).toBe(true);
    expect(await query(`SELECT name FROM ${TABLE}`)).toEqual([
      { name: '0001_payments_amount_index' },
    ]);
    expect(
      lines.filter((line) => String(line.msg).startsWith('dropping an INVALID index')),
    ).toMatchObject([{ index: INDEX }]);
  });
});
