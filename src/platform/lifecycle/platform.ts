import type { Config } from '../config/config.js';
import { createPool, pingPostgres, type Pool } from '../database/db.js';
import { createKafka, pingKafka, type Admin, type KafkaClient } from '../kafka/kafka.js';
import type { Logger } from '../telemetry/logger.js';
import type { DependencyCheck } from './readiness.js';
import { registerReadinessProbe } from './readiness-metrics.js';
import {
  closeRedis,
  connectRedis,
  createRedis,
  pingRedis,
  type RedisClient,
} from '../redis/redis.js';

/** The shared clients of one process: one pool, one Redis connection, one Kafka client. */
export interface Platform {
  config: Config;
  logger: Logger;
  pool: Pool;
  /** Created on first use: a process without the API never opens a Redis connection. */
  redis: RedisClient;
  /** Created on first use: a process without a Kafka role never opens a Kafka connection. */
  kafka: KafkaClient;
  /** Topic administration (created on first use); connected at start-up for Kafka roles. */
  admin: Admin;
  checks: DependencyCheck[];
  close: () => Promise<void>;
}

export interface PlatformOptions {
  /**
   * Whether this process's roles need Kafka (relay, settlement). When true the admin client is
   * connected at start-up and Kafka is part of readiness; when false (the API alone) Kafka is
   * neither connected nor probed: the API accepts payments through the outbox whether Kafka is
   * up or not, so a Kafka outage must not take it out of the load balancer (DESIGN 24).
   */
  kafka: boolean;
  /**
   * Whether this process's roles use Redis (the API alone, DESIGN 117). When true the client
   * connects at start-up and Redis is listed in readiness; when false no client is made (the
   * process may have no REDIS_URL, nor a Redis user) and Redis is not probed. Default true.
   */
  redis?: boolean;
}

export async function createPlatform(
  config: Config,
  logger: Logger,
  options: PlatformOptions = { kafka: true },
): Promise<Platform> {
  const pool = createPool(config, logger);
  const usesRedis = options.redis ?? true;
  let redis: RedisClient | undefined;
  const redisClient = () => (redis ??= createRedis(config, logger));
  let kafka: KafkaClient | undefined;
  let admin: Admin | undefined;
  const kafkaClient = () => (kafka ??= createKafka(config, logger));
  const adminClient = () =>
    (admin ??= kafkaClient().admin({ retry: { retries: 2, initialRetryTime: 100 } }));
  if (usesRedis) await connectRedis(redisClient(), logger);
  if (options.kafka) {
    try {
      await adminClient().connect();
    } catch (error) {
      // Kafka down at boot must not stop the process: its roles wait for it. Readiness reports it.
      logger.warn({ err: error }, 'kafka unavailable at start-up; continuing');
    }
  }
  const checks: DependencyCheck[] = [
    { name: 'postgres', check: () => pingPostgres(pool) },
    ...(usesRedis ? [{ name: 'redis', check: () => pingRedis(redisClient()) }] : []),
    ...(options.kafka ? [{ name: 'kafka', check: () => pingKafka(adminClient()) }] : []),
  ];
  const unregisterReadiness = registerReadinessProbe(checks);
  return {
    config,
    logger,
    pool,
    get redis() {
      return redisClient();
    },
    get kafka() {
      return kafkaClient();
    },
    get admin() {
      return adminClient();
    },
    checks,
    close: async () => {
      unregisterReadiness();
      await Promise.allSettled([
        admin?.disconnect(),
        redis === undefined ? undefined : closeRedis(redis),
        pool.end(),
      ]);
    },
  };
}
