import { randomBytes } from 'node:crypto';
import { startAcquirer } from '../../src/apps/acquirer/start-acquirer.js';
import { startRelay } from '../../src/apps/relay/start-relay.js';
import type { RunningRole } from '../../src/apps/running-role.js';
import { startSettlement } from '../../src/apps/settlement/start-settlement.js';
import { createLogger } from '../../src/platform/telemetry/logger.js';
import { createPlatform, type Platform } from '../../src/platform/lifecycle/platform.js';
import { testConfig, type TestDatabase } from './isolation.js';
import type { ServiceRole } from './role-login.js';
import { FAST_SETTLEMENT } from './settlement-harness.js';
import { startTestApi, type TestApi } from './test-api.js';

/**
 * The whole product against `db`, as deployed: the real API on port 0, the relay and settlement
 * (test-fast retry timings), each with its own clients and its own database login
 * (payments_api, payments_relay, payments_settlement), sharing the file's topics, consumer group
 * and Redis prefix. Settlement calls the acquirer role over HTTP (ACQUIRER_URL), which keeps its
 * books on its own login (payments_acquirer), as deployed. `close` stops the roles, then the API and its clients.
 */
export async function startTestPipeline(
  db: TestDatabase,
  overrides: Record<string, string> = {},
): Promise<TestApi> {
  // The API reads no settlement setting: it keeps the default database timeouts (FAST_SETTLEMENT's
  // short ones bound the roles' statements so a lease outlasts them, SETTLEMENT_LEASE_MS's check).
  const api = await startTestApi(db, overrides);
  const shared = api.platform.config;
  const platforms: Platform[] = [];
  const roles: RunningRole[] = [];
  // The acquirer role requires it, settlement sends it (DESIGN 121).
  const link = { ACQUIRER_TOKEN: randomBytes(24).toString('base64url') };
  try {
    const acquirerPlatform = await rolePlatform(db, 'acquirer', {
      ...overrides,
      REDIS_KEY_PREFIX: shared.REDIS_KEY_PREFIX,
      ACQUIRER_PORT: '0',
      ...link,
    });
    platforms.push(acquirerPlatform);
    const acquirer = await startAcquirer(acquirerPlatform);
    roles.push(acquirer);
    const acquirerUrl = `http://127.0.0.1:${String(acquirer.port)}`;
    for (const [role, start] of [
      ['relay', startRelay],
      ['settlement', startSettlement],
    ] as const) {
      const platform = await rolePlatform(db, role, {
        ...FAST_SETTLEMENT,
        ...overrides,
        REDIS_KEY_PREFIX: shared.REDIS_KEY_PREFIX,
        KAFKA_TOPIC_PAYMENTS: shared.KAFKA_TOPIC_PAYMENTS,
        KAFKA_TOPIC_DLQ: shared.KAFKA_TOPIC_DLQ,
        KAFKA_CONSUMER_GROUP: shared.KAFKA_CONSUMER_GROUP,
        ACQUIRER_URL: acquirerUrl,
        ...link,
      });
      platforms.push(platform);
      roles.push(await start(platform));
    }
  } catch (error) {
    for (const role of roles.reverse()) await role.close();
    for (const platform of platforms) await platform.close();
    await api.close();
    throw error;
  }
  return {
    ...api,
    close: async () => {
      for (const role of roles.reverse()) await role.close();
      for (const platform of platforms) await platform.close();
      await api.close();
    },
  };
}

/** A process kind's clients on `db` with its own login (overrides name topics, prefix, ...). */
export function rolePlatform(
  db: TestDatabase,
  role: ServiceRole,
  overrides: Record<string, string> = {},
): Promise<Platform> {
  const config = testConfig({ ...overrides, DATABASE_URL: db.roleUrl(role) });
  return createPlatform(config, createLogger(config));
}
