import { loadConfig } from '../platform/config.js';
import { createLogger } from '../platform/logger.js';
import { migrateUp } from '../platform/migrate.js';
import { runCli } from './run-cli.js';

/** `npm run migrate`: applies pending migrations to DATABASE_URL. */
await runCli('migrate', async () => {
  const config = loadConfig();
  const logger = createLogger(config, { service: 'payments', command: 'migrate' });
  const applied = await migrateUp(config.DATABASE_URL, logger);
  logger.info({ applied }, applied.length ? 'migrations applied' : 'schema is up to date');
});
