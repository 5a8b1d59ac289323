import { Cluster, Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/platform/config/config.js';
import { createRedis, type RedisClient } from '../../src/platform/redis/redis.js';
import { createLogger } from '../../src/platform/telemetry/logger.js';

const silent = createLogger({ LOG_LEVEL: 'silent', LOG_FORMAT: 'json' });
const CA_FILE = new URL('../fixtures/redis-test-ca.pem', import.meta.url).pathname;

function refusal(env: Record<string, string>, readFile?: (path: string) => string): ConfigError {
  try {
    loadConfig(env, readFile);
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error('expected loadConfig to throw');
}

/** A client made (lazily, never connected) from `env`, closed at once. */
function clientFor(env: Record<string, string>): RedisClient {
  const redis = createRedis(loadConfig(env), silent);
  redis.disconnect();
  return redis;
}

describe('Redis topology settings (DESIGN 123)', () => {
  it('when nothing is set, then one node from REDIS_URL, Sentinel master name payments', () => {
    const config = loadConfig({});
    expect(config.REDIS_SENTINELS).toBeUndefined();
    expect(config.REDIS_CLUSTER_NODES).toBeUndefined();
    expect(config.REDIS_SENTINEL_MASTER).toBe('payments');
    const redis = clientFor({});
    expect(redis).toBeInstanceOf(Redis);
    expect((redis as Redis).options.sentinels ?? null).toBeNull();
  });

  it('when REDIS_SENTINELS is set with a rediss: URL, then the client asks the Sentinels over TLS, with the URL user and the Sentinel password', () => {
    const redis = clientFor({
      REDIS_URL: 'rediss://payments_api:pw@ignored.host:6379',
      REDIS_SENTINELS: '10.0.0.1:26379, 10.0.0.2:26380',
      REDIS_SENTINEL_MASTER: 'orders',
      REDIS_SENTINEL_PASSWORD: 'sentinel-pw',
      REDIS_TLS_CA_FILE: CA_FILE,
    }) as Redis;
    expect(redis.options).toMatchObject({
      sentinels: [
        { host: '10.0.0.1', port: 26379 },
        { host: '10.0.0.2', port: 26380 },
      ],
      name: 'orders',
      username: 'payments_api',
      password: 'pw',
      sentinelPassword: 'sentinel-pw',
      enableTLSForSentinelMode: true,
      enableOfflineQueue: false,
      commandTimeout: 200,
    });
    expect(redis.options.tls?.ca).toContain('BEGIN CERTIFICATE');
    expect(redis.options.sentinelTLS?.ca).toContain('BEGIN CERTIFICATE');
    // A demoted primary that kept its clients answers READONLY: reconnect through the Sentinels.
    const reconnect = redis.options.reconnectOnError;
    expect(reconnect?.(new Error("READONLY You can't write against a read only replica."))).toBe(
      true,
    );
    expect(reconnect?.(new Error('NOPERM'))).toBe(false);
  });

  it('when REDIS_CLUSTER_NODES is set, then a Cluster client with the same bounds and the URL login', () => {
    const redis = clientFor({
      REDIS_URL: 'redis://payments_api:pw@ignored.host:6379',
      REDIS_CLUSTER_NODES: '127.0.0.1:7391,127.0.0.1:7392',
    });
    expect(redis).toBeInstanceOf(Cluster);
    const { options } = redis as Cluster;
    expect(options.enableOfflineQueue).toBe(false);
    expect(options.redisOptions).toMatchObject({
      username: 'payments_api',
      password: 'pw',
      commandTimeout: 200,
      maxRetriesPerRequest: 1,
    });
    expect(options.redisOptions?.tls).toBeUndefined();
  });

  it('when both REDIS_SENTINELS and REDIS_CLUSTER_NODES are set, then one line refuses them', () => {
    const error = refusal({ REDIS_SENTINELS: 'a:1', REDIS_CLUSTER_NODES: 'b:2' });
    expect(error.variable).toBe('REDIS_CLUSTER_NODES');
    expect(error.message).toContain('REDIS_SENTINELS are both set');
  });

  it('when an entry is not host:port, then the setting is named with the accepted form', () => {
    const error = refusal({ REDIS_SENTINELS: '10.0.0.1' });
    expect(error.variable).toBe('REDIS_SENTINELS');
    expect(error.message).toContain('host:port');
  });

  it('when REDIS_SENTINEL_PASSWORD_FILE names a file, then it is the password; a refusal never echoes it', () => {
    const readFile = () => 's3cret\n';
    const config = loadConfig({ REDIS_SENTINEL_PASSWORD_FILE: '/run/secrets/s' }, readFile);
    expect(config.REDIS_SENTINEL_PASSWORD).toBe('s3cret');
    const error = refusal({
      REDIS_SENTINEL_PASSWORD: 's3cret',
      REDIS_SENTINEL_PASSWORD_FILE: '/x',
    });
    expect(error.message).not.toContain('s3cret');
  });

  it('when production is given the development Sentinel password, then it is refused', () => {
    const env = { REDIS_SENTINEL_PASSWORD: 'payments_sentinels' };
    expect(loadConfig(env).REDIS_SENTINEL_PASSWORD).toBe('payments_sentinels');
    const error = refusal({
      ...env,
      NODE_ENV: 'production',
      DATABASE_URL: 'postgres://app:s3cret@db:5432/payments',
      REDIS_URL: 'redis://app:s3cret@cache:6379',
    });
    expect(error.variable).toBe('REDIS_SENTINEL_PASSWORD');
    expect(error.message).toContain('refused with NODE_ENV=production');
  });

  it('when REDIS_TLS_CA_FILE cannot be read, then the client is refused naming the setting', () => {
    const config = loadConfig({
      REDIS_URL: 'rediss://127.0.0.1:6380',
      REDIS_TLS_CA_FILE: '/nonexistent/ca.pem',
    });
    expect(() => createRedis(config, silent)).toThrow(
      'REDIS_TLS_CA_FILE names a file that cannot be read (ENOENT)',
    );
  });
});
