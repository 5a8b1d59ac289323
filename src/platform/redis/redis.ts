import { Redis } from 'ioredis';
import type { Config } from '../config/config.js';
import type { Logger } from '../telemetry/logger.js';

export type { Redis } from 'ioredis';

/**
 * Redis is a cache and a lock service here, never the source of truth, so a command must fail
 * quickly when Redis is away (the caller falls back to the database path) instead of queueing.
 */
export function createRedis(
  config: Pick<Config, 'REDIS_URL' | 'REDIS_COMMAND_TIMEOUT_MS'>,
  logger: Logger,
): Redis {
  const redis = new Redis(config.REDIS_URL, {
    lazyConnect: true,
    /**
     * A frozen Redis keeps its socket open, so nothing else would ever fail the command: every
     * command (cache, Redlock's scripts, the in-flight marker, pings) rejects after this long.
     * The connection stays up; the late answer is matched to the timed-out command and dropped.
     */
    commandTimeout: config.REDIS_COMMAND_TIMEOUT_MS,
    /** One retry per command, then the error reaches the caller's fallback. */
    maxRetriesPerRequest: 1,
    /** Queueing commands while disconnected would turn an outage into a latency spike. */
    enableOfflineQueue: false,
    connectTimeout: 2_000,
    /** Reconnect forever with a capped backoff: Redis coming back must heal without a restart. */
    retryStrategy: (attempt) => Math.min(50 * 2 ** attempt, 2_000),
    /** Commands issued in the same tick share one round trip (cache set + lock release). */
    enableAutoPipelining: true,
  });
  let healthy = true;
  redis.on('error', (error: Error) => {
    if (healthy) logger.warn({ err: error }, 'redis connection error');
    healthy = false;
  });
  redis.on('ready', () => {
    if (!healthy) logger.info('redis connection restored');
    healthy = true;
  });
  return redis;
}

/** Connects at start-up; a Redis that is down at boot is tolerated (the cache is optional). */
export async function connectRedis(redis: Redis, logger: Logger): Promise<void> {
  try {
    await redis.connect();
  } catch (error) {
    logger.warn({ err: error }, 'redis unavailable at start-up; continuing, will reconnect');
  }
}

export async function pingRedis(redis: Redis): Promise<void> {
  await redis.ping();
}

export async function closeRedis(redis: Redis): Promise<void> {
  if (redis.status === 'end') return;
  try {
    await redis.quit();
  } catch {
    redis.disconnect();
  }
}
