import { randomBytes } from 'node:crypto';
import type { TestDatabase } from './isolation.js';
import { TEST_SECRETS_KEYS, testConfig } from './isolation.js';
import { createApiRedisUser, type RedisRoleUser } from './redis-user.js';
import { startRoleProcess, type RoleProcess } from './role-process.js';
import { FAST_SETTLEMENT } from './settlement-harness.js';

export type FleetRole = 'acquirer' | 'api' | 'relay' | 'settlement' | 'webhooks';

/** The line each role's entry point logs once it works. */
const READY: Record<FleetRole, string> = {
  acquirer: 'acquirer ready',
  api: 'api listening',
  relay: 'relay ready',
  settlement: 'settlement ready',
  webhooks: 'webhooks ready',
};

export interface DeployedFleet {
  /** http://127.0.0.1:<port> of the API process. */
  apiUrl: string;
  /** http://127.0.0.1:<port> of the acquirer process ('' without one); settlement calls it. */
  acquirerUrl: string;
  processes: Map<FleetRole, RoleProcess>;
  /**
   * The environment every process got (the shared names: topics, group, Redis prefix); no
   * REDIS_URL: only the API has one, its own user's.
   */
  env: Record<string, string>;
  /** SIGTERM to each process, the API last; resolves with their exit codes. */
  stop: () => Promise<Record<string, number | null>>;
}

/** `url` logging in as `payments_<role>` (the local password is the login's name). */
export function loginUrl(url: string, role: FleetRole): string {
  const parsed = new URL(url);
  parsed.username = `payments_${role}`;
  parsed.password = `payments_${role}`;
  return parsed.toString();
}

/**
 * The product as deployed on `db`: each role its own process (dist/apps/<role>/main.js) on its
 * own login (payments_api, payments_relay, payments_settlement, payments_webhooks), sharing one
 * set of topics, consumer group and Redis prefix; settlement with the tests' fast retry timings.
 * The API alone reaches Redis, as its own Redis user (payments_api's rights for this prefix,
 * test/support/redis-user.ts), on the run's Redis or on the REDIS_URL `perRole.api` gives.
 * `perRole` adds settings to one role (e.g. WEBHOOK_ALLOWED_NETWORKS for api and webhooks).
 * With an `acquirer` role (list it before settlement), settlement calls it (ACQUIRER_URL).
 */
export async function startDeployedFleet(
  db: TestDatabase,
  roles: readonly FleetRole[],
  perRole: Partial<Record<FleetRole, Record<string, string>>> = {},
): Promise<DeployedFleet> {
  const config = testConfig();
  const env: Record<string, string> = {
    REDIS_KEY_PREFIX: config.REDIS_KEY_PREFIX,
    KAFKA_BROKERS: config.KAFKA_BROKERS.join(','),
    KAFKA_TOPIC_PAYMENTS: config.KAFKA_TOPIC_PAYMENTS,
    KAFKA_TOPIC_DLQ: config.KAFKA_TOPIC_DLQ,
    KAFKA_CONSUMER_GROUP: config.KAFKA_CONSUMER_GROUP,
    PORT: '0',
    METRICS_PORT: '0',
    LOG_LEVEL: 'info',
    // The acquirer role requires it, settlement sends it (DESIGN 121): one per fleet.
    ACQUIRER_TOKEN: randomBytes(24).toString('base64url'),
  };
  const processes = new Map<FleetRole, RoleProcess>();
  let redisUser: RedisRoleUser | undefined;
  const stop = async () => {
    const codes: Record<string, number | null> = {};
    for (const role of [...processes.keys()].reverse())
      codes[role] = (await processes.get(role)?.stop()) ?? null;
    await redisUser?.drop();
    return codes;
  };
  let apiUrl = '';
  let acquirerUrl = '';
  try {
    if (roles.includes('api')) redisUser = await createApiRedisUser(config.REDIS_KEY_PREFIX);
    for (const role of roles) {
      const proc = startRoleProcess(`apps/${role}/main.js`, {
        ...env,
        ...(role === 'settlement' ? FAST_SETTLEMENT : {}),
        ...(role === 'settlement' && acquirerUrl !== '' ? { ACQUIRER_URL: acquirerUrl } : {}),
        ...(role === 'acquirer' ? { ACQUIRER_PORT: '0' } : {}),
        // As deployed: only the roles that seal or open webhook secrets get the key ring.
        ...(role === 'api' || role === 'webhooks' ? { SECRETS_KEYS: TEST_SECRETS_KEYS } : {}),
        ...perRole[role],
        ...(role === 'api' && redisUser
          ? { REDIS_URL: redisUser.url(perRole.api?.REDIS_URL ?? config.REDIS_URL) }
          : {}),
        DATABASE_URL: loginUrl(db.url, role),
      });
      processes.set(role, proc);
      const ready = await withTimeout(proc.logLine(READY[role]), 60_000, `${role}: ${READY[role]}`);
      if (role === 'api') apiUrl = `http://127.0.0.1:${String(ready.port)}`;
      if (role === 'acquirer') acquirerUrl = `http://127.0.0.1:${String(ready.port)}`;
    }
  } catch (error) {
    await stop();
    throw error;
  }
  return { apiUrl, acquirerUrl, processes, env, stop };
}

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      reject(new Error(`timed out after ${ms} ms waiting for ${what}`));
    }, ms);
  });
  return Promise.race([promise, timeout]).finally(() => {
    clearTimeout(timer);
  });
}
