import { mkdtemp, readdir, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/platform/telemetry/logger.js';
import { applyMigrations, MIGRATIONS_DIR } from '../../src/platform/database/migration-runner.js';
import { createTestDatabase, testConfig, type TestDatabase } from '../support/isolation.js';

/**
 * The acquirer's books on its own login, durably (migration 0026): once
 * acquirer_books_own_login() is called, settlement's login stays without them whatever migration
 * run follows (each applies service-grants.ts, DESIGN 116), until acquirer_books_shared() and the
 * next migration run.
 */

const logger = createLogger(testConfig({ LOG_LEVEL: 'silent' }), { service: 'test' });
const databases: TestDatabase[] = [];

afterEach(async () => {
  await Promise.all(databases.splice(0).map((db) => db.drop()));
});

async function database(options?: { migrated: boolean }): Promise<TestDatabase> {
  const db = await createTestDatabase(options);
  databases.push(db);
  return db;
}

/** The Postgres error code of `sql` run on `role`'s own login, or 'ok'. */
async function attempt(
  db: TestDatabase,
  role: 'acquirer' | 'settlement',
  sql: string,
): Promise<string> {
  const client = new pg.Client({ connectionString: db.roleUrl(role) });
  await client.connect();
  try {
    await client.query(sql);
    return 'ok';
  } catch (error) {
    return (error as { code?: string }).code ?? String(error);
  } finally {
    await client.end();
  }
}

const READ_CHARGES = 'SELECT count(*) FROM acquirer_simulator_charges';
/** The hold books (0035): the procedure takes them too, at once, before any migration run. */
const READ_HOLDS = 'SELECT count(*) FROM acquirer_simulator_holds';
const WRITE_CALLS = `INSERT INTO acquirer_simulator_calls
  (idempotency_key, payment_id, source, amount, currency, result, replayed)
  VALUES ('k', gen_random_uuid(), 'tok_visa', 1, 'EUR', 'approved', false)`;
const PERMISSION_DENIED = '42501';

describe('acquirer_books_own_login()', () => {
  it('when it was called and migrations run again, then settlement is still refused the books and the acquirer keeps them', async () => {
    const db = await database();
    expect(await attempt(db, 'settlement', READ_CHARGES)).toBe('ok');

    await db.pool.query('CALL acquirer_books_own_login()');
    // Every later migration run applies the grants again.
    await applyMigrations(db.url, logger);
    await applyMigrations(db.url, logger);

    expect(await attempt(db, 'settlement', READ_CHARGES)).toBe(PERMISSION_DENIED);
    expect(await attempt(db, 'settlement', WRITE_CALLS)).toBe(PERMISSION_DENIED);
    expect(await attempt(db, 'acquirer', READ_CHARGES)).toBe('ok');
    expect(await attempt(db, 'acquirer', WRITE_CALLS)).toBe('ok');
    // Settlement's other grants are still given.
    expect(await attempt(db, 'settlement', 'SELECT count(*) FROM settlement_jobs')).toBe('ok');
  });

  it('when it is called twice and then acquirer_books_shared() and a migration run, then settlement has the books again', async () => {
    const db = await database();
    await db.pool.query('CALL acquirer_books_own_login()');
    await db.pool.query('CALL acquirer_books_own_login()');
    expect(await attempt(db, 'settlement', READ_CHARGES)).toBe(PERMISSION_DENIED);
    expect(await attempt(db, 'settlement', READ_HOLDS)).toBe(PERMISSION_DENIED);

    await db.pool.query('CALL acquirer_books_shared()');
    await applyMigrations(db.url, logger);

    expect(await attempt(db, 'settlement', READ_CHARGES)).toBe('ok');
    expect(await attempt(db, 'settlement', READ_HOLDS)).toBe('ok');
    expect(await attempt(db, 'settlement', WRITE_CALLS)).toBe('ok');
    const { rows } = await db.pool.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM acquirer_books_login',
    );
    expect(rows[0]?.n).toBe(0);
  });

  it("when a database took settlement's books under 0025 and then migrates to 0026, then the choice is recorded and the migration does not give them back", async () => {
    const db = await database({ migrated: false });
    // The migrations up to 0025 only (a release before 0026), then 0025's CALL.
    const upTo0025 = await mkdtemp(path.join(tmpdir(), 'migrations-0025-'));
    try {
      const files = (await readdir(MIGRATIONS_DIR)).filter((file) => file < '0026');
      await Promise.all(
        files.map((file) => symlink(path.join(MIGRATIONS_DIR, file), path.join(upTo0025, file))),
      );
      await applyMigrations(db.url, logger, { dir: upTo0025 });
    } finally {
      await rm(upTo0025, { recursive: true });
    }
    await db.pool.query('CALL acquirer_books_own_login()');
    expect(await attempt(db, 'settlement', READ_CHARGES)).toBe(PERMISSION_DENIED);

    const { applied } = await applyMigrations(db.url, logger);

    expect(applied.some((name) => name.startsWith('0026_'))).toBe(true);
    expect(await attempt(db, 'settlement', READ_CHARGES)).toBe(PERMISSION_DENIED);
    await applyMigrations(db.url, logger);
    expect(await attempt(db, 'settlement', READ_CHARGES)).toBe(PERMISSION_DENIED);
  });
});
