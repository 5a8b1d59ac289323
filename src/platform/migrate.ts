import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { runner } from 'node-pg-migrate';
import type { Logger } from './logger.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));

/**
 * migrations/ at the repository root, found from this file so any working directory works: two
 * levels up from src/platform/ and dist/platform/, three from the tools' build of this file
 * (dist-tools/src/platform/, see tools/tsconfig.json).
 */
export const MIGRATIONS_DIR =
  ['../../migrations', '../../../migrations']
    .map((relative) => path.resolve(HERE, relative))
    .find((dir) => existsSync(dir)) ?? path.resolve(HERE, '../../migrations');

export interface MigrationTimeouts {
  /** Connecting, including a server that accepts the connection and never answers. */
  connectMs: number;
  /** One statement (client-side, so it fires on a frozen server too). */
  queryMs: number;
}

/**
 * Applies every pending forward migration in one transaction, under node-pg-migrate's advisory
 * lock so two processes migrating at once wait for each other. Returns the names applied.
 */
export async function migrateUp(
  databaseUrl: string,
  logger: Logger,
  timeouts?: MigrationTimeouts,
): Promise<string[]> {
  const applied = await runner({
    databaseUrl: timeouts
      ? {
          connectionString: databaseUrl,
          connectionTimeoutMillis: timeouts.connectMs,
          query_timeout: timeouts.queryMs,
        }
      : databaseUrl,
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
