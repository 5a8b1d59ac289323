import { ENTRY_POINTS } from './repo-root.js';

/** Runs one compiled program of the checkout with the owner's environment; resolves its stdout. */
export type RunProgram = (entry: string, args: string[], timeoutMs: number) => Promise<string>;

/**
 * The run's two merchants, on a tier wide enough for the load (chaos measures faults, not the
 * rate limit). Resolves their API keys.
 */
export async function createChaosMerchants(run: RunProgram, runId: string): Promise<string[]> {
  await run(
    ENTRY_POINTS.merchantTier,
    ['--define', 'chaos', '--rate', '1000000', '--burst', '10000000'],
    60_000,
  );
  const apiKeys: string[] = [];
  for (const n of [1, 2]) {
    const out = await run(
      ENTRY_POINTS.merchantCreate,
      ['--name', `${runId} merchant ${n}`, '--tier', 'chaos'],
      60_000,
    );
    apiKeys.push((JSON.parse(out) as { api_key: string }).api_key);
  }
  return apiKeys;
}
