import { readFileSync } from 'node:fs';
import { checkAcquirerLink } from '../platform/config/acquirer-link-settings.js';
import { ConfigError, loadConfig } from '../platform/config/config.js';
import { createLogger } from '../platform/telemetry/logger.js';
import { startInternalServer } from '../platform/lifecycle/internal-server.js';
import { createOutageLog } from '../platform/resilience/outage-log.js';
import { createPlatform } from '../platform/lifecycle/platform.js';
import { guardLogin } from '../platform/database/privileged-login.js';
import { guardRedisPermissions, redisUser } from '../platform/redis/redis-permissions.js';
import { checkReadiness, drainableReadiness } from '../platform/lifecycle/readiness.js';
import { registerShutdown } from '../platform/lifecycle/shutdown.js';
import { secretsKeyRing } from '../platform/secrets/key-ring.js';
import { logSpanExportOutages } from '../platform/telemetry/tracing.js';
import { startAcquirer } from './acquirer/start-acquirer.js';
import { apiRedisProbes } from './api/redis-needs.js';
import { startApi } from './api/start-api.js';
import { startRelay } from './relay/start-relay.js';
import { processDependencies } from './role-dependencies.js';
import type { RunningRole } from './running-role.js';
import { startSettlement } from './settlement/start-settlement.js';
import { startWebhooks } from './webhooks/start-webhooks.js';

const starters = {
  acquirer: startAcquirer,
  api: startApi,
  relay: startRelay,
  settlement: startSettlement,
  webhooks: startWebhooks,
} as const;
export type RoleName = keyof typeof starters;

/** The roles that seal or open webhook signing secrets: only they need SECRETS_KEYS. */
const KEY_RING_ROLES: readonly RoleName[] = ['api', 'webhooks'];

/** The roles that talk to Kafka; the API and the webhooks role never connect to it. */
const KAFKA_ROLES: readonly RoleName[] = ['relay', 'settlement'];
/** The only role that uses Redis (DESIGN 117): the others neither connect nor need REDIS_URL. */
const REDIS_ROLES: readonly RoleName[] = ['api'];

/**
 * The composition root shared by every entry point: config, logger, clients, the requested
 * roles, and graceful shutdown on SIGTERM/SIGINT. A bad setting exits 1 with one line.
 */
export async function runRoles(roles: readonly RoleName[]): Promise<void> {
  let config;
  try {
    config = loadConfig();
    // NODE_ENV=production without a key ring: one line naming SECRETS_KEYS, before anything starts.
    if (roles.some((role) => KEY_RING_ROLES.includes(role))) secretsKeyRing(config);
    // The acquirer link's token and TLS files, for the roles this process runs (DESIGN 121).
    checkAcquirerLink(
      config,
      { calls: roles.includes('settlement'), serves: roles.includes('acquirer') },
      (path) => readFileSync(path, 'utf8'),
    );
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(1);
    }
    throw error;
  }
  const logger = createLogger(config, { service: 'payments', roles: roles.join(',') });
  logSpanExportOutages(createOutageLog('otlp collector', logger, config.OUTAGE_LOG_INTERVAL_MS));
  // Only the relay and settlement talk to Kafka; the API and webhooks never connect to it.
  const platform = await createPlatform(config, logger, {
    kafka: roles.some((role) => KAFKA_ROLES.includes(role)),
    redis: roles.some((role) => REDIS_ROLES.includes(role)),
  });
  const running: Pick<RunningRole, 'close' | 'drain' | 'internalRoutes'>[] = [];
  // The internal /readyz lists every dependency the process has a client for; only those its
  // roles cannot work without decide its status (DESIGN 109).
  const needs = processDependencies(roles, config);
  const internalReadiness = drainableReadiness(() =>
    checkReadiness(platform.checks, config.READINESS_TIMEOUT_MS, needs),
  );
  // On SIGTERM every /readyz says `draining` first, and a process serving clients keeps serving
  // SHUTDOWN_DRAIN_MS so the load balancer stops sending before the listener closes.
  const drain = async () => {
    internalReadiness.drain();
    const draining = running.filter((role) => role.drain !== undefined);
    for (const role of draining) role.drain?.();
    if (draining.length === 0 || config.SHUTDOWN_DRAIN_MS === 0) return;
    logger.info({ drain_ms: config.SHUTDOWN_DRAIN_MS }, 'draining: readiness says draining');
    await new Promise((resolve) => setTimeout(resolve, config.SHUTDOWN_DRAIN_MS));
  };
  // Installed before any role starts: a signal during start-up closes what has started so far
  // instead of killing the process mid-way with the default handler.
  registerShutdown(
    logger,
    (signal) => [
      ...(signal === 'SIGTERM' ? [drain] : []),
      ...running.map((role) => role.close),
      platform.close,
    ],
    config.SHUTDOWN_TIMEOUT_MS,
  );
  try {
    if (!config.DB_ALLOW_PRIVILEGED_LOGIN) {
      const stopGuard = await guardLogin(platform.pool, logger, (error) => {
        // At boot, or once Postgres answers if it was down then: nothing is served as this login.
        logger.fatal(error.message);
        process.exit(1);
      });
      running.push({
        close: () => {
          stopGuard();
          return Promise.resolve();
        },
      });
    }
    if (roles.some((role) => REDIS_ROLES.includes(role))) {
      // The Redis user may run every command the API sends, on its keys (DESIGN 117): at boot,
      // or once Redis answers. A refusal is the operator's to fix, not a Redis outage to ride out.
      const stopRedisGuard = await guardRedisPermissions(
        platform.redis,
        redisUser(config.REDIS_URL),
        apiRedisProbes(config.REDIS_KEY_PREFIX, config.REDIS_CLUSTER_NODES !== undefined),
        logger,
        (error) => {
          logger.fatal(error.message);
          process.exit(1);
        },
      );
      running.push({
        close: () => {
          stopRedisGuard();
          return Promise.resolve();
        },
      });
    }
    for (const role of roles) {
      // The job gauges read one registration per process: with settlement beside it (the
      // all-in-one), webhooks reports every kind (its login alone reads only its own table).
      running.push(
        role === 'webhooks' && roles.includes('settlement')
          ? await startWebhooks(platform, { jobProbeKinds: ['settlement', 'refund', 'webhook'] })
          : await starters[role](platform),
      );
    }
    // Every process, the API included, serves /metrics and the detailed /readyz internally.
    running.push(
      await startInternalServer(
        {
          host: config.INTERNAL_HOST,
          port: config.METRICS_PORT,
          readiness: internalReadiness.readiness,
          routes: running.flatMap((role) => role.internalRoutes ?? []),
        },
        logger,
      ),
    );
  } catch (error) {
    logger.fatal({ err: error }, 'start-up failed');
    await Promise.allSettled(running.map((role) => role.close()));
    await platform.close();
    process.exit(1);
  }
  logger.info('ready');
}
