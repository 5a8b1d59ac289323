import { parseArgs } from 'node:util';
import { createMerchant, DEFAULT_TIER } from '../merchants/merchant-repository.js';
import { isForeignKeyViolation, runCli, UsageError, withPool } from './run-cli.js';

const USAGE = 'usage: merchant:create -- --name <name> (1-200 characters) [--tier <tier>]';

/**
 * `npm run merchant:create -- --name <name> [--tier <tier>]`: creates a merchant and its first
 * API key and prints one JSON line with its id and the key. The key is shown only here; the
 * database keeps its hash.
 */
async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { name: { type: 'string' }, tier: { type: 'string' } },
    strict: true,
  });
  const name = values.name?.trim();
  if (!name || name.length > 200) throw new UsageError(USAGE);
  const tier = values.tier ?? DEFAULT_TIER;
  await withPool('merchant-create', async (pool) => {
    try {
      const merchant = await createMerchant(pool, name, tier);
      process.stdout.write(
        `${JSON.stringify({
          id: merchant.id,
          name: merchant.name,
          tier: merchant.tier,
          api_key: merchant.apiKey,
          api_key_id: merchant.apiKeyId,
          created_at: merchant.createdAt.toISOString(),
        })}\n`,
      );
    } catch (error) {
      if (isForeignKeyViolation(error))
        throw new UsageError(`no tier named ${JSON.stringify(tier)}`);
      throw error;
    }
  });
}

await runCli('merchant:create', USAGE, main);
