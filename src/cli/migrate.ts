import { loadConfig } from '../platform/config.js';
import { createLogger } from '../platform/logger.js';
import { migrateUp } from '../platform/migrate.js';
import { runCli, UsageError } from './run-cli.js';

const USAGE =
  'usage: migrate (no arguments): applies pending migrations as MIGRATION_DATABASE_URL, else DATABASE_URL';

/** `npm run migrate`: applies pending migrations as MIGRATION_DATABASE_URL (else DATABASE_URL). */
await runCli('migrate', USAGE, async () => {
  // An argument is a mistake (a flag this command does not have): refuse it rather than migrate.
  if (process.argv.length > 2) throw new UsageError(USAGE);
  const config = loadConfig();
  const logger = createLogger(config, { service: 'payments', command: 'migrate' });
  const applied = await migrateUp(config.MIGRATION_DATABASE_URL ?? config.DATABASE_URL, logger, {
    connectMs: config.DATABASE_CONNECT_TIMEOUT_MS,
    queryMs: config.MIGRATION_QUERY_TIMEOUT_MS,
  });
  logger.info({ applied }, applied.length ? 'migrations applied' : 'schema is up to date');
});
