import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { createMerchant } from '../../src/merchants/merchant-repository.js';
import { BENCH_TIER, defineTier } from '../../src/merchants/tier-repository.js';

/**
 * The owner's database URL, the login that may create merchants and tiers:
 * MIGRATION_DATABASE_URL, else DATABASE_URL, else the local stack's (`scripts/stack.sh env`).
 * Never a service login: merchants are the owner's to write.
 */
export async function ownerDatabaseUrl(
  env: Readonly<Record<string, string | undefined>>,
  root: string,
): Promise<string> {
  const given = env.MIGRATION_DATABASE_URL ?? env.DATABASE_URL;
  if (given) return given;
  const { stdout } = await promisify(execFile)(
    'bash',
    [path.join(root, 'scripts/stack.sh'), 'env'],
    {
      timeout: 30_000,
    },
  );
  const match = /^export MIGRATION_DATABASE_URL=(.*)$/m.exec(stdout);
  if (!match?.[1]) throw new Error('scripts/stack.sh env printed no MIGRATION_DATABASE_URL');
  return match[1].replace(/^'(.*)'$/, '$1');
}

/**
 * Creates `count` merchants named after the run on the `bench` tier (the widest the tiers table
 * allows: load tests measure the API, not the rate limit) and returns their API keys.
 */
export async function createLoadMerchants(
  databaseUrl: string,
  runId: string,
  count: number,
): Promise<string[]> {
  const pool = new pg.Pool({
    connectionString: databaseUrl,
    max: 1,
    connectionTimeoutMillis: 10_000,
  });
  try {
    await defineTier(pool, BENCH_TIER);
    const keys: string[] = [];
    for (let i = 1; i <= count; i++) {
      keys.push((await createMerchant(pool, `${runId} merchant ${i}`, BENCH_TIER.name)).apiKey);
    }
    return keys;
  } finally {
    await pool.end();
  }
}
