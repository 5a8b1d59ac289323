import { z } from 'zod';
import { commaList } from './config-fields.js';
import { ConfigError } from './config-error.js';

/** `host:port`, the host a name, an IPv4 or a bracketed IPv6 address. */
const hostPortList = (what: string, example: string) =>
  commaList({
    entry: (text) => (/^[A-Za-z0-9.\-[\]:]+:\d{1,5}$/.test(text) ? text : undefined),
    form: `a comma-separated list of ${what} as host:port, e.g. ${example}`,
    min: 1,
  });

/**
 * How the API reaches a Redis that fails over (DESIGN 123): through Sentinel to the primary it
 * names, or a Redis Cluster from seed nodes; TLS with a private CA. The user and password always
 * come from REDIS_URL (or REDIS_URL_FILE), whichever way the nodes are found.
 */
export const redisSettings = {
  REDIS_TLS_CA_FILE: z
    .string()
    .min(1)
    .optional()
    .describe(
      "PEM file of the CA that signed Redis' certificates, for a `rediss://` REDIS_URL with a private CA (the certificate and host name are verified either way).",
    ),
  REDIS_SENTINELS: hostPortList('Sentinels', '10.0.0.1:26379,10.0.0.2:26379')
    .optional()
    .describe(
      "Comma-separated `host:port` of the Redis Sentinels: when set the API asks them for the primary named REDIS_SENTINEL_MASTER (and again after a failover); REDIS_URL's host is then unused, its user, password and `rediss:` still apply (TLS to the Sentinels too).",
    ),
  REDIS_SENTINEL_MASTER: z
    .string()
    .regex(/^[A-Za-z0-9._-]{1,64}$/, { message: 'must be a Sentinel master name ([A-Za-z0-9._-])' })
    .default('payments')
    .describe('The name the Sentinels monitor the primary under (with REDIS_SENTINELS).'),
  REDIS_SENTINEL_USERNAME: z
    .string()
    .min(1)
    .optional()
    .describe('User the API logs in to the Sentinels as, when they require one (ACL).'),
  /** The Sentinels' own password: they are not the data nodes, whose users REDIS_URL names. */
  REDIS_SENTINEL_PASSWORD: z
    .string()
    .min(1)
    .optional()
    .describe(
      "Password of the Sentinels (their `requirepass`, or REDIS_SENTINEL_USERNAME's), when they require one. Or `REDIS_SENTINEL_PASSWORD_FILE`.",
    ),
  REDIS_CLUSTER_NODES: hostPortList('Redis Cluster nodes', '10.0.0.1:6379,10.0.0.2:6379')
    .optional()
    .describe(
      "Comma-separated `host:port` seeds of a Redis Cluster: when set the API uses a Cluster client (keys are hash-tagged by merchant); REDIS_URL's host is then unused, its user, password and `rediss:` still apply.",
    ),
};

/** The HA stack's Sentinel password (scripts/ha/redis-ha-conf.sh): refused in production. */
export const DEVELOPMENT_SENTINEL_PASSWORD = 'payments_sentinels';

interface RedisTopologyConfig {
  NODE_ENV: string;
  REDIS_SENTINELS?: string[] | undefined;
  REDIS_SENTINEL_PASSWORD?: string | undefined;
  REDIS_CLUSTER_NODES?: string[] | undefined;
}

/**
 * Sentinel and Cluster are two ways of finding the nodes: one of them at most. Production
 * refuses the development Sentinel password, as it refuses the development logins.
 */
export function checkRedisTopology(config: RedisTopologyConfig): void {
  if (
    config.NODE_ENV === 'production' &&
    config.REDIS_SENTINEL_PASSWORD === DEVELOPMENT_SENTINEL_PASSWORD
  ) {
    throw new ConfigError(
      'REDIS_SENTINEL_PASSWORD',
      'is the built-in development password, refused with NODE_ENV=production',
    );
  }
  if (config.REDIS_SENTINELS !== undefined && config.REDIS_CLUSTER_NODES !== undefined) {
    throw new ConfigError(
      'REDIS_CLUSTER_NODES',
      'and REDIS_SENTINELS are both set; a Redis is reached through Sentinel or as a Cluster, not both',
    );
  }
}
