import { parseArgs } from 'node:util';
import { setMerchantTier } from '../merchants/merchant-repository.js';
import { defineTier, listTiers } from '../merchants/tier-repository.js';
import {
  isCheckViolation,
  isForeignKeyViolation,
  runCli,
  UsageError,
  withPool,
} from './run-cli.js';

const USAGE = [
  'usage: merchant:tier -- --merchant <merchant id> --tier <tier>',
  '       merchant:tier -- --define <tier> --rate <per second> --burst <requests>',
  '       merchant:tier -- --list',
].join('\n');

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * `npm run merchant:tier`: moves a merchant to another rate-limit tier, defines (or changes) a
 * tier, or lists them; prints one JSON line per result. Running API processes apply a change
 * within AUTH_CACHE_TTL_MS.
 */
async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      merchant: { type: 'string' },
      tier: { type: 'string' },
      define: { type: 'string' },
      rate: { type: 'string' },
      burst: { type: 'string' },
      list: { type: 'boolean' },
    },
    strict: true,
  });
  const print = (value: unknown) => process.stdout.write(`${JSON.stringify(value)}\n`);

  if (values.list) {
    await withPool('merchant-tier', async (pool) => {
      for (const tier of await listTiers(pool)) {
        print({ name: tier.name, rate_per_second: tier.ratePerSecond, burst: tier.burst });
      }
    });
    return;
  }

  if (values.define !== undefined) {
    const rate = Number(values.rate);
    const burst = Number(values.burst);
    if (!Number.isInteger(rate) || !Number.isInteger(burst) || rate < 1 || burst < rate) {
      throw new UsageError(`${USAGE}\n(--rate and --burst are integers, 1 <= rate <= burst)`);
    }
    const tier = { name: values.define, ratePerSecond: rate, burst };
    await withPool('merchant-tier', async (pool) => {
      try {
        await defineTier(pool, tier);
      } catch (error) {
        if (isCheckViolation(error)) {
          throw new UsageError(
            'a tier name is 1-40 of a-z 0-9 _ -; rate <= 1000000, burst <= 10000000',
          );
        }
        throw error;
      }
    });
    print({ name: tier.name, rate_per_second: rate, burst });
    return;
  }

  const { merchant, tier } = values;
  if (!merchant || !UUID.test(merchant) || !tier) throw new UsageError(USAGE);
  await withPool('merchant-tier', async (pool) => {
    let found: boolean;
    try {
      found = await setMerchantTier(pool, merchant, tier);
    } catch (error) {
      if (isForeignKeyViolation(error))
        throw new UsageError(`no tier named ${JSON.stringify(tier)}`);
      throw error;
    }
    if (!found) throw new UsageError(`no merchant ${merchant}`);
  });
  print({ id: merchant, tier });
}

await runCli('merchant:tier', USAGE, main);
