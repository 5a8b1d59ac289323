import { parseArgs } from 'node:util';
import { loadConfig } from '../platform/config.js';
import { createPool } from '../platform/db.js';
import { createLogger } from '../platform/logger.js';
import { createMerchant } from '../merchants/merchant-repository.js';
import { runCli, UsageError } from './run-cli.js';

/**
 * `npm run merchant:create -- --name <name>`: creates a merchant and prints one JSON line with
 * its id and API key. The key is shown only here; the database keeps its hash.
 */
async function main(): Promise<void> {
  const { values } = parseArgs({ options: { name: { type: 'string' } }, strict: true });
  const name = values.name?.trim();
  if (!name || name.length > 200)
    throw new UsageError('usage: merchant:create -- --name <name> (1-200 characters)');
  const config = loadConfig();
  const logger = createLogger({ ...config, LOG_LEVEL: 'warn' });
  const pool = createPool({ ...config, DATABASE_POOL_MAX: 1 }, logger, 'merchant-create');
  try {
    const merchant = await createMerchant(pool, name);
    process.stdout.write(
      `${JSON.stringify({ id: merchant.id, name: merchant.name, api_key: merchant.apiKey, created_at: merchant.createdAt.toISOString() })}\n`,
    );
  } finally {
    await pool.end();
  }
}

await runCli('merchant:create', main);
