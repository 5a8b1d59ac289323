import { readFileSync } from 'node:fs';
import type { ConnectionOptions } from 'node:tls';
import { Cluster, Redis, type RedisOptions } from 'ioredis';
import type { Config } from '../config/config.js';
import { ConfigError } from '../config/config-error.js';
import type { Logger } from '../telemetry/logger.js';

export type { Redis } from 'ioredis';

/**
 * The API's Redis client: one node (or the primary Sentinel names), or a Redis Cluster. Code
 * that uses Redis takes this type; every key set one command touches shares a hash tag
 * (hash-tag.ts), so both answer the same commands (DESIGN 123).
 */
export type RedisClient = Redis | Cluster;

/** Where and how: REDIS_URL and the timeout always, the TLS, Sentinel and Cluster settings when set. */
export type RedisConfig = Pick<Config, 'REDIS_URL' | 'REDIS_COMMAND_TIMEOUT_MS'> &
  Partial<RedisTopology>;

type RedisTopology = Pick<
  Config,
  | 'REDIS_TLS_CA_FILE'
  | 'REDIS_SENTINELS'
  | 'REDIS_SENTINEL_MASTER'
  | 'REDIS_SENTINEL_USERNAME'
  | 'REDIS_SENTINEL_PASSWORD'
  | 'REDIS_CLUSTER_NODES'
>;

const CONNECT_TIMEOUT_MS = 2_000;
/** Reconnect forever with a capped backoff: Redis coming back must heal without a restart. */
const reconnectDelay = (attempt: number) => Math.min(50 * 2 ** attempt, 2_000);

/**
 * Redis is a cache and a lock service here, never the source of truth, so a command must fail
 * quickly when Redis is away (the caller falls back to the database path) instead of queueing.
 * With REDIS_SENTINELS the client asks the Sentinels for the primary at every (re)connect, so a
 * failover costs the commands of the outage and a reconnect; with REDIS_CLUSTER_NODES it is a
 * Cluster client with the same bounds.
 */
export function createRedis(config: RedisConfig, logger: Logger): RedisClient {
  const url = new URL(config.REDIS_URL);
  const tls = url.protocol === 'rediss:' ? tlsOptions(config.REDIS_TLS_CA_FILE) : undefined;
  const node: RedisOptions = {
    /**
     * A frozen Redis keeps its socket open, so nothing else would ever fail the command: every
     * command (cache, Redlock's scripts, the in-flight marker, pings) rejects after this long.
     * The connection stays up; the late answer is matched to the timed-out command and dropped.
     */
    commandTimeout: config.REDIS_COMMAND_TIMEOUT_MS,
    /** One retry per command, then the error reaches the caller's fallback. */
    maxRetriesPerRequest: 1,
    connectTimeout: CONNECT_TIMEOUT_MS,
    ...(url.username === '' ? {} : { username: decodeURIComponent(url.username) }),
    ...(url.password === '' ? {} : { password: decodeURIComponent(url.password) }),
    ...(tls === undefined ? {} : { tls }),
  };
  const redis = config.REDIS_CLUSTER_NODES
    ? new Cluster(config.REDIS_CLUSTER_NODES.map(hostPort), {
        lazyConnect: true,
        enableOfflineQueue: false,
        enableAutoPipelining: true,
        clusterRetryStrategy: reconnectDelay,
        slotsRefreshTimeout: CONNECT_TIMEOUT_MS,
        redisOptions: node,
      })
    : new Redis(config.REDIS_URL, {
        ...node,
        lazyConnect: true,
        /** Queueing commands while disconnected would turn an outage into a latency spike. */
        enableOfflineQueue: false,
        retryStrategy: reconnectDelay,
        /** Commands issued in the same tick share one round trip (cache set + lock release). */
        enableAutoPipelining: true,
        ...(config.REDIS_SENTINELS ? sentinelOptions(config, tls) : {}),
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

/** The Sentinels, asked for REDIS_SENTINEL_MASTER's address; TLS to them with a rediss: URL. */
function sentinelOptions(config: RedisConfig, tls: ConnectionOptions | undefined): RedisOptions {
  return {
    sentinels: (config.REDIS_SENTINELS ?? []).map(hostPort),
    name: config.REDIS_SENTINEL_MASTER ?? 'payments',
    ...(config.REDIS_SENTINEL_USERNAME ? { sentinelUsername: config.REDIS_SENTINEL_USERNAME } : {}),
    ...(config.REDIS_SENTINEL_PASSWORD ? { sentinelPassword: config.REDIS_SENTINEL_PASSWORD } : {}),
    ...(tls === undefined ? {} : { sentinelTLS: tls, enableTLSForSentinelMode: true }),
    sentinelCommandTimeout: CONNECT_TIMEOUT_MS,
    sentinelRetryStrategy: reconnectDelay,
    /**
     * Sentinel disconnects a demoted primary's clients, but one it could not reach (partitioned)
     * answers writes with READONLY once it rejoins as a replica: reconnect, asking the Sentinels.
     */
    reconnectOnError: (error) => error.message.startsWith('READONLY'),
  };
}

/** The server's certificate and host name are verified; against REDIS_TLS_CA_FILE when set. */
function tlsOptions(caFile: string | undefined): ConnectionOptions {
  if (caFile === undefined) return {};
  try {
    return { ca: readFileSync(caFile, 'utf8') };
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'read error';
    throw new ConfigError('REDIS_TLS_CA_FILE', `names a file that cannot be read (${code})`);
  }
}

function hostPort(text: string): { host: string; port: number } {
  const colon = text.lastIndexOf(':');
  return {
    host: text.slice(0, colon).replace(/^\[|\]$/g, ''),
    port: Number(text.slice(colon + 1)),
  };
}

/** Connects at start-up; a Redis that is down at boot is tolerated (the cache is optional). */
export async function connectRedis(redis: RedisClient, logger: Logger): Promise<void> {
  try {
    await redis.connect();
  } catch (error) {
    logger.warn({ err: error }, 'redis unavailable at start-up; continuing, will reconnect');
  }
}

export async function pingRedis(redis: RedisClient): Promise<void> {
  await redis.ping();
}

export async function closeRedis(redis: RedisClient): Promise<void> {
  if (redis.status === 'end') return;
  try {
    await redis.quit();
  } catch {
    redis.disconnect();
  }
}
