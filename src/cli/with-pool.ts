import { loadConfig } from '../platform/config.js';
import { createPool, type Pool } from '../platform/db.js';
import { createLogger } from '../platform/logger.js';

/** One connection to DATABASE_URL for a command, closed when `fn` ends. */
export async function withPool<T>(name: string, fn: (pool: Pool) => Promise<T>): Promise<T> {
  const config = loadConfig();
  const logger = createLogger({ ...config, LOG_LEVEL: 'warn' });
  const pool = createPool({ ...config, DATABASE_POOL_MAX: 1 }, logger, name);
  try {
    return await fn(pool);
  } finally {
    await pool.end();
  }
}
