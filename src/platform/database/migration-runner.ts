import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { runner } from 'node-pg-migrate';
import pg from 'pg';
import { fullJitterDelay } from '../resilience/backoff.js';
import { MIGRATION_DEFAULTS } from '../config/migration-settings.js';
import type { Logger } from '../telemetry/logger.js';
import { applyServiceGrants } from './apply-grants.js';
import { createSqlLoader } from './migration-loader.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));

/**
 * migrations/ at the repository root, found from this file so any working directory works: three
 * levels up from src/platform/database/ and dist/platform/database/, four from the tools' build
 * of this file (dist-tools/src/platform/database/, see tools/tsconfig.json).
 */
export const MIGRATIONS_DIR =
  ['../../../migrations', '../../../../migrations']
    .map((relative) => path.resolve(HERE, relative))
    .find((dir) => existsSync(dir)) ?? path.resolve(HERE, '../../../migrations');

export interface MigrationTimeouts {
  /** Connecting, including a server that accepts the connection and never answers. */
  connectMs: number;
  /** One statement (client-side, so it fires on a frozen server too). */
  queryMs: number;
}

/** MIGRATION_LOCK_TIMEOUT_MS, MIGRATION_STATEMENT_TIMEOUT_MS, MIGRATION_LOCK_RETRIES. */
export interface MigrationSettings {
  lockTimeoutMs: number;
  statementTimeoutMs: number;
  lockRetries: number;
}

export interface MigrateOptions {
  timeouts?: MigrationTimeouts;
  settings?: Partial<MigrationSettings>;
  /** Another directory (tests' fixtures) with its own bookkeeping table. */
  dir?: string;
  migrationsTable?: string;
  /** The wait before retry n (1-based); full jitter from 1 s doubling to 30 s unless given. */
  retryDelayMs?: (retry: number) => number;
  /**
   * Apply the service logins' grants (service-grants.ts) after the migrations; by default only
   * for migrations/ itself, not for another directory's fixtures.
   */
  grants?: boolean;
}

/** The name the grants step goes by in a retry's log line or a final 55P03. */
export const GRANTS_STEP = 'service grants (src/platform/database/service-grants.ts)';

export interface MigrateResult {
  applied: string[];
  /** How many times a migration refused a lock was tried again. */
  lockRetries: number;
}

/** SQLSTATE 55P03 lock_not_available: lock_timeout fired (or NOWAIT found the lock taken). */
export function isLockNotGranted(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === '55P03';
}

/**
 * Applies every pending forward migration, each in its own transaction (or none, for a file
 * marked `-- migrate: no-transaction`) with lock_timeout and statement_timeout set for it, under
 * node-pg-migrate's advisory lock so two migrators wait for each other. A migration refused a
 * lock is retried after a backoff, logging one line per retry; what committed stays committed.
 * Then, pending migrations or not, the service logins get exactly their grants (DESIGN 116).
 */
export async function applyMigrations(
  databaseUrl: string,
  logger: Logger,
  options: MigrateOptions = {},
): Promise<MigrateResult> {
  const settings = { ...MIGRATION_DEFAULTS, ...options.settings };
  const delayOf =
    options.retryDelayMs ?? ((retry: number) => fullJitterDelay(retry, 1_000, 30_000));
  const applied: string[] = [];
  for (let retry = 0; ; retry++) {
    const started: string[] = [];
    try {
      const ran = await runOnce(databaseUrl, logger, options, settings, (name) => {
        started.push(name);
      });
      applied.push(...ran);
      return { applied, lockRetries: retry };
    } catch (error) {
      // Every migration that began before the failing one committed (each is its own transaction).
      applied.push(...started.slice(0, -1));
      if (!isLockNotGranted(error)) throw error;
      if (retry >= settings.lockRetries) throw lockNotGranted(started.at(-1), retry + 1, settings);
      const delayMs = delayOf(retry + 1);
      logger.warn(
        {
          migration: started.at(-1),
          retry: retry + 1,
          of: settings.lockRetries,
          delayMs,
          lockTimeoutMs: settings.lockTimeoutMs,
        },
        'migration not granted its lock within lock_timeout (55P03); rolled back, retrying',
      );
      await new Promise((resolve) => setTimeout(resolve, delayMs));
    }
  }
}

/** The final failure: which migration, how often it waited, where to look (still 55P03). */
function lockNotGranted(
  migration: string | undefined,
  tries: number,
  settings: MigrationSettings,
): Error {
  const error = new Error(
    `${migration ?? 'a migration'} was not granted its lock in ${String(tries)} tries of lock_timeout ${String(settings.lockTimeoutMs)} ms (55P03): a transaction holds the table (pg_stat_activity, pg_locks); docs/operations.md "How to upgrade"`,
  );
  return Object.assign(error, { code: '55P03' });
}

/** Applies pending migrations/ (tests' and tools' entry point); returns the names applied. */
export async function migrateUp(
  databaseUrl: string,
  logger: Logger,
  timeouts?: MigrationTimeouts,
): Promise<string[]> {
  return (await applyMigrations(databaseUrl, logger, { timeouts })).applied;
}

async function runOnce(
  databaseUrl: string,
  logger: Logger,
  options: MigrateOptions,
  settings: MigrationSettings,
  onStart: (name: string) => void,
): Promise<string[]> {
  const client = new pg.Client({
    connectionString: databaseUrl,
    connectionTimeoutMillis: options.timeouts?.connectMs,
    query_timeout: options.timeouts?.queryMs,
  });
  client.on('error', (error) => {
    logger.warn({ err: error }, 'migration connection failed');
  });
  await client.connect();
  try {
    const applied = await runner({
      dbClient: rollingBack(client),
      dir: options.dir ?? MIGRATIONS_DIR,
      direction: 'up',
      migrationsTable: options.migrationsTable ?? 'pgmigrations',
      checkOrder: true,
      singleTransaction: false,
      advisoryLockMode: 'wait',
      migrationLoaderStrategies: [
        { extensions: ['.sql'], loader: createSqlLoader(settings, onStart, logger) },
      ],
      logger: runnerLogger(logger),
    });
    if (options.grants ?? options.dir === undefined) {
      onStart(GRANTS_STEP);
      await applyServiceGrants(client, settings, logger);
    }
    return applied.map((migration) => migration.name);
  } finally {
    await client.end();
  }
}

/**
 * The client as node-pg-migrate sees it (it only calls query on a client it did not open): a
 * statement the server refused is followed by ROLLBACK, so a failed migration's transaction
 * ends at once and the runner's advisory unlock on the same session still works. Outside a
 * transaction the ROLLBACK is a no-op warning.
 */
function rollingBack(client: pg.Client): pg.ClientBase {
  const query = async (text: string | pg.QueryConfig, values?: unknown[]) => {
    try {
      return await client.query(text, values);
    } catch (error) {
      if (typeof (error as { code?: unknown }).code === 'string') {
        await client.query('ROLLBACK').catch(() => undefined);
      }
      throw error;
    }
  };
  // Only `query` is used by node-pg-migrate for an external client (its db.ts); the rest of
  // ClientBase is never touched, so the object is cast rather than fully implemented.
  return { query } as unknown as pg.ClientBase;
}

function runnerLogger(logger: Logger) {
  return {
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
      // A lock timeout is retried and logged once by applyMigrations; node-pg-migrate's own
      // "Error executing" dump of it would be a second line per retry.
      if (msg.includes('due to lock timeout')) logger.debug(msg);
      else logger.error(msg);
    },
  };
}
