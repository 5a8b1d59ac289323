import { ConfigError, loadConfig } from '../platform/config/config.js';
import { createPool, type Pool } from '../platform/database/db.js';
import { createLogger } from '../platform/telemetry/logger.js';

/** A wrong command line: its message is the usage line, printed as it is. */
export class UsageError extends Error {}

/**
 * Runs a command's `main`: a bad setting or a wrong command line prints its one line; anything
 * else prints `<name> failed: <message>`. Either way the exit code is 1. `--help` (or `-h`)
 * anywhere on the command line prints `usage` and exits 0 before `main` connects to anything.
 */
export async function runCli(
  name: string,
  usage: string,
  main: () => Promise<void>,
): Promise<void> {
  const args = process.argv.slice(2);
  if (args.includes('--help') || args.includes('-h')) {
    process.stdout.write(`${usage}\n`);
    return;
  }
  try {
    await main();
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const known = error instanceof ConfigError || error instanceof UsageError;
    process.stderr.write(`${known ? message : `${name} failed: ${message}`}\n`);
    process.exitCode = 1;
  }
}

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

/** Postgres' foreign_key_violation: the row names something (a tier, a merchant) that is not there. */
export function isForeignKeyViolation(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === '23503';
}

/** Postgres' check_violation: a value outside a column's CHECK. */
export function isCheckViolation(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === '23514';
}
