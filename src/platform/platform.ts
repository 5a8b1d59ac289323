import type { Config } from './config.js';
import { createPool, pingPostgres, type Pool } from './db.js';
import { createKafka, pingKafka, type Admin, type KafkaClient } from './kafka.js';
import type { Logger } from './logger.js';
import type { DependencyCheck } from './readiness.js';
import { registerReadinessProbe } from './readiness-metrics.js';
import { closeRedis, connectRedis, createRedis, pingRedis, type Redis } from './redis.js';

/** The shared clients of one process: one pool, one Redis connection, one Kafka client. */
export interface Platform {
  config: Config;
  logger: Logger;
  pool: Pool;
  redis: Redis;
  kafka: KafkaClient;
  /** Kept connected for readiness probes and topic administration. */
  admin: Admin;
  checks: DependencyCheck[];
  close: () => Promise<void>;
}

export async function createPlatform(config: Config, logger: Logger): Promise<Platform> {
  const pool = createPool(config, logger);
  const redis = createRedis(config, logger);
  const kafka = createKafka(config, logger);
  const admin = kafka.admin({ retry: { retries: 2, initialRetryTime: 100 } });
  await connectRedis(redis, logger);
  try {
    await admin.connect();
  } catch (error) {
    // Kafka down at boot must not stop the API: the outbox absorbs it. Readiness reports it.
    logger.warn({ err: error }, 'kafka unavailable at start-up; continuing');
  }
  const checks: DependencyCheck[] = [
    { name: 'postgres', check: () => pingPostgres(pool) },
    { name: 'redis', check: () => pingRedis(redis) },
    { name: 'kafka', check: () => pingKafka(admin) },
  ];
  const unregisterReadiness = registerReadinessProbe(checks);
  return {
    config,
    logger,
    pool,
    redis,
    kafka,
    admin,
    checks,
    close: async () => {
      unregisterReadiness();
      await Promise.allSettled([admin.disconnect(), closeRedis(redis), pool.end()]);
    },
  };
}
