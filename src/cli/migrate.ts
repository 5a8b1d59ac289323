import { loadConfig } from '../platform/config/config.js';
import { createLogger } from '../platform/telemetry/logger.js';
import { applyMigrations } from '../platform/database/migration-runner.js';
import { runCli, UsageError } from './run-cli.js';

const USAGE =
  'usage: migrate (no arguments): applies pending migrations as MIGRATION_DATABASE_URL, else DATABASE_URL';

/**
 * `npm run migrate`: applies pending migrations as MIGRATION_DATABASE_URL (else DATABASE_URL),
 * each in its own transaction with MIGRATION_LOCK_TIMEOUT_MS and MIGRATION_STATEMENT_TIMEOUT_MS,
 * retrying one refused a lock up to MIGRATION_LOCK_RETRIES times (docs/operations.md).
 */
await runCli('migrate', USAGE, async () => {
  // An argument is a mistake (a flag this command does not have): refuse it rather than migrate.
  if (process.argv.length > 2) throw new UsageError(USAGE);
  const config = loadConfig();
  const logger = createLogger(config, { service: 'payments', command: 'migrate' });
  const { applied, lockRetries } = await applyMigrations(
    config.MIGRATION_DATABASE_URL ?? config.DATABASE_URL,
    logger,
    {
      timeouts: {
        connectMs: config.DATABASE_CONNECT_TIMEOUT_MS,
        queryMs: config.MIGRATION_QUERY_TIMEOUT_MS,
      },
      settings: {
        lockTimeoutMs: config.MIGRATION_LOCK_TIMEOUT_MS,
        statementTimeoutMs: config.MIGRATION_STATEMENT_TIMEOUT_MS,
        lockRetries: config.MIGRATION_LOCK_RETRIES,
      },
    },
  );
  logger.info(
    { applied, lockRetries },
    applied.length ? 'migrations applied' : 'schema is up to date',
  );
});
