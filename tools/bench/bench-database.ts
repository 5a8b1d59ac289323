import pg from 'pg';
import { createMerchant } from '../../src/merchants/merchant-repository.js';
import { BENCH_TIER, defineTier } from '../../src/merchants/tier-repository.js';
import type { Config } from '../../src/platform/config/config.js';
import type { Logger } from '../../src/platform/telemetry/logger.js';
import { migrateUp } from '../../src/platform/database/migration-runner.js';
import { deleteKeys } from './delete-keys.js';
import { roleDatabaseUrl } from '../support/role-database-url.js';
import { createScratchDatabase, dropScratchDatabaseOrReport } from '../support/scratch-database.js';

/** A migrated scratch database with one merchant on the bench tier, for an API under load. */
export interface BenchDatabase {
  name: string;
  url: string;
  /** Two connections for the bench's own queries. */
  pool: pg.Pool;
  merchant: { id: string; apiKey: string };
  /** The environment of an API process on this database (its own Redis key prefix). */
  apiEnv: (logLevel: string, poolMax: number) => Record<string, string>;
  /** Deletes the run's Redis keys, closes the pool and drops the database. */
  close: () => Promise<void>;
}

export async function openBenchDatabase(
  config: Config,
  logger: Logger,
  prefix: string,
): Promise<BenchDatabase> {
  const name = `${prefix}_${Date.now().toString(36)}`;
  const scratch = await createScratchDatabase(config.DATABASE_URL, name);
  const pool = new pg.Pool({ connectionString: scratch.url, max: 2 });
  // DROP DATABASE ... WITH (FORCE) at the end cuts connections pool.end() has not closed yet.
  pool.on('error', () => undefined);
  const redisPrefix = `bench:${name}:`;
  const close = async () => {
    await deleteKeys(config, logger, redisPrefix);
    await pool.end();
    await dropScratchDatabaseOrReport(scratch, (line) => {
      logger.warn(line);
    });
  };
  try {
    await migrateUp(scratch.url, logger);
    await defineTier(pool, BENCH_TIER);
    const merchant = await createMerchant(pool, 'bench', BENCH_TIER.name);
    return {
      name,
      url: scratch.url,
      pool,
      merchant,
      apiEnv: (logLevel, poolMax) => ({
        // The API as deployed: payments_api on the scratch database the bench's owner login made.
        DATABASE_URL: roleDatabaseUrl(scratch.url, 'api'),
        LOG_LEVEL: logLevel,
        REDIS_KEY_PREFIX: redisPrefix,
        DATABASE_POOL_MAX: String(poolMax),
      }),
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}
