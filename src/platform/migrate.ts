import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { runner } from 'node-pg-migrate';
import type { Logger } from './logger.js';

/** migrations/ at the repository root, found from this file so any working directory works. */
export const MIGRATIONS_DIR = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  '../../migrations',
);

/**
 * Applies every pending forward migration in one transaction, under node-pg-migrate's advisory
 * lock so two processes migrating at once wait for each other. Returns the names applied.
 */
export async function migrateUp(databaseUrl: string, logger: Logger): Promise<string[]> {
  const applied = await runner({
    databaseUrl,
    dir: MIGRATIONS_DIR,
    direction: 'up',
    migrationsTable: 'pgmigrations',
    checkOrder: true,
    singleTransaction: true,
    advisoryLockMode: 'wait',
    logger: {
      debug: (msg: string) => {
        logger.debug(msg);
      },
      info: (msg: string) => {
        logger.debug(msg);
      },
      warn: (msg: string) => {
        logger.warn(msg);
      },
      error: (msg: string) => {
        logger.error(msg);
      },
    },
  });
  return applied.map((migration) => migration.name);
}
