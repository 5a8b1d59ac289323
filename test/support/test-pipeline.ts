import { startRelay } from '../../src/apps/relay/start-relay.js';
import { startSettlement } from '../../src/apps/settlement/start-settlement.js';
import type { TestDatabase } from './isolation.js';
import { FAST_SETTLEMENT } from './settlement-harness.js';
import { startTestApi, type TestApi } from './test-api.js';

/**
 * The whole product in this process against `db`: the real API on port 0, the relay and
 * settlement (test-fast retry timings), with the file's own topics and Redis prefix.
 * `close` stops the roles, then the API and its clients.
 */
export async function startTestPipeline(
  db: TestDatabase,
  overrides: Record<string, string> = {},
): Promise<TestApi> {
  const api = await startTestApi(db, { ...FAST_SETTLEMENT, ...overrides });
  const roles = [await startRelay(api.platform), await startSettlement(api.platform)];
  return {
    ...api,
    close: async () => {
      for (const role of roles.reverse()) await role.close();
      await api.close();
    },
  };
}
