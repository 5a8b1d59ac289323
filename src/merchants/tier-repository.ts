import type { Queryable } from '../platform/database/db.js';
import type { Tier } from './merchant-repository.js';

/**
 * The tier benchmarks and load tests put their merchants on: the largest numbers the table
 * allows, so the API's own throughput is measured, not the limit.
 */
export const BENCH_TIER: Tier = { name: 'bench', ratePerSecond: 1_000_000, burst: 10_000_000 };

/**
 * Creates a rate-limit tier or changes its numbers. Merchants on it get the new numbers within
 * AUTH_CACHE_TTL_MS (the authenticator caches a merchant with its tier).
 */
export async function defineTier(db: Queryable, tier: Tier): Promise<void> {
  await db.query(
    `INSERT INTO rate_limit_tiers (name, rate_per_second, burst) VALUES ($1, $2, $3)
     ON CONFLICT (name) DO UPDATE SET rate_per_second = $2, burst = $3`,
    [tier.name, tier.ratePerSecond, tier.burst],
  );
}

export async function listTiers(db: Queryable): Promise<Tier[]> {
  const { rows } = await db.query<{ name: string; rate_per_second: number; burst: number }>(
    'SELECT name, rate_per_second, burst FROM rate_limit_tiers ORDER BY name',
  );
  return rows.map((row) => ({
    name: row.name,
    ratePerSecond: row.rate_per_second,
    burst: row.burst,
  }));
}
