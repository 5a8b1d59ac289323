import { ConfigError, loadConfig } from '../platform/config.js';
import { createLogger } from '../platform/logger.js';
import { migrateUp } from '../platform/migrate.js';

/** `npm run migrate`: applies pending migrations to DATABASE_URL. */
try {
  const config = loadConfig();
  const logger = createLogger(config, { service: 'payments', command: 'migrate' });
  const applied = await migrateUp(config.DATABASE_URL, logger);
  logger.info({ applied }, applied.length ? 'migrations applied' : 'schema is up to date');
} catch (error) {
  const message = error instanceof Error ? error.message : String(error);
  process.stderr.write(
    `${error instanceof ConfigError ? message : `migration failed: ${message}`}\n`,
  );
  process.exitCode = 1;
}
