import { readFileSync } from 'node:fs';
import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { inject } from 'vitest';
import type { RedisClient } from '../../src/platform/redis/redis.js';

/**
 * A client of the run's Redis as `url`'s user (the run's admin URL by default): a Cluster client
 * when the run is against a Redis Cluster (`npm run test:redis-cluster`, DESIGN 123), else one
 * node. TLS with the run's CA for a `rediss://` URL. The caller disconnects it.
 */
export function testRedisClient(
  url: string = inject('services').redisUrl,
  options: RedisOptions = {},
): RedisClient {
  const { redisClusterNodes, redisTlsCaFile } = inject('services');
  const parsed = new URL(url);
  const tls =
    parsed.protocol === 'rediss:'
      ? { tls: redisTlsCaFile ? { ca: readFileSync(redisTlsCaFile, 'utf8') } : {} }
      : {};
  if (!redisClusterNodes) return new Redis(url, { ...tls, ...options });
  const { keyPrefix, lazyConnect, ...nodeOptions } = options;
  const seeds = redisClusterNodes.split(',').map((seed) => {
    const colon = seed.lastIndexOf(':');
    return { host: seed.slice(0, colon), port: Number(seed.slice(colon + 1)) };
  });
  return new Cluster(seeds, {
    ...(keyPrefix === undefined ? {} : { keyPrefix }),
    ...(lazyConnect === undefined ? {} : { lazyConnect }),
    redisOptions: {
      ...tls,
      username: decodeURIComponent(parsed.username),
      password: decodeURIComponent(parsed.password),
      ...nodeOptions,
    },
  });
}

/** Whether `client` is a Cluster client (the run is against a Redis Cluster). */
export function isCluster(client: RedisClient): client is Cluster {
  return client instanceof Cluster;
}
