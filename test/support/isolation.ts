import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { Cluster } from 'ioredis';
import { inject } from 'vitest';
import { loadConfig, type Config } from '../../src/platform/config/config.js';
import { deleteKeysWithPrefix as deleteAllWithPrefix } from '../../tools/support/delete-keys-with-prefix.js';
import { createScratchDatabase } from '../../tools/support/scratch-database.js';
import type { RedisClient } from '../../src/platform/redis/redis.js';
import { roleDatabaseUrl, type ServiceRole } from './role-login.js';
import { testRedisClient } from './test-redis-client.js';

/** A short random suffix; test resources are named `<what>-<suffix>` so parallel files never meet. */
export function uniqueSuffix(): string {
  return randomBytes(5).toString('hex');
}

export function uniqueTopic(prefix = 'test'): string {
  return `${prefix}.${uniqueSuffix()}`;
}

export interface TestDatabase {
  /** The owner's URL: for migrating and for the test's own setup and assertions, never for role code. */
  url: string;
  /** The owner's pool: the test's eyes (setup rows, assertions), never what the code under test runs on. */
  pool: pg.Pool;
  /** The URL of a process kind's own login on this database, as deployed (docs/operations.md, compose). */
  roleUrl: (role: ServiceRole) => string;
  /** A pool on a process kind's own login (created on first use, closed by drop). */
  login: (role: ServiceRole) => pg.Pool;
  drop: () => Promise<void>;
}

/**
 * A fresh database cloned from the run's migrated template: the schema, and no rows.
 * `{ migrated: false }` gives an empty database instead (for testing migrations themselves).
 */
export async function createTestDatabase({ migrated = true } = {}): Promise<TestDatabase> {
  const { databaseUrl } = inject('services');
  const name = `${inject('runId')}_${uniqueSuffix()}`;
  const template = migrated ? inject('templateDatabase') : 'template0';
  const database = await createScratchDatabase(databaseUrl, name, { template });
  const pool = new pg.Pool({ connectionString: database.url, max: 10 });
  // pool.end() resolves before its connections have closed, so the DROP ... WITH (FORCE) below
  // can terminate one that is still closing; that error is expected and must not crash the file.
  pool.on('error', () => undefined);
  const logins = new Map<ServiceRole, pg.Pool>();
  return {
    url: database.url,
    pool,
    roleUrl: (role) => roleDatabaseUrl(database.url, role),
    login: (role) => {
      let rolePool = logins.get(role);
      if (!rolePool) {
        rolePool = new pg.Pool({ connectionString: roleDatabaseUrl(database.url, role), max: 5 });
        rolePool.on('error', () => undefined);
        logins.set(role, rolePool);
      }
      return rolePool;
    },
    drop: async () => {
      await Promise.all([pool.end(), ...[...logins.values()].map((rolePool) => rolePool.end())]);
      await database.drop();
    },
  };
}

export interface TestRedis {
  redis: RedisClient;
  prefix: string;
  /** Deletes every key under this file's prefix and disconnects. */
  cleanup: () => Promise<void>;
}

export async function createTestRedis(): Promise<TestRedis> {
  const prefix = `test:${uniqueSuffix()}:`;
  const redis = testRedisClient(inject('services').redisUrl, { keyPrefix: prefix });
  await redis.ping();
  return {
    redis,
    prefix,
    cleanup: async () => {
      await deleteKeysWithPrefix(redis, prefix);
      redis.disconnect();
    },
  };
}

/**
 * Deletes every key under `prefix`: this file's "FLUSHDB", which leaves the keys of files
 * running in parallel alone. SCAN patterns ignore ioredis' keyPrefix, so a raw client is used.
 */
export async function deleteKeysWithPrefix(redis: RedisClient, prefix: string): Promise<void> {
  const raw =
    redis instanceof Cluster
      ? redis.duplicate([], { keyPrefix: '', lazyConnect: false, enableOfflineQueue: true })
      : redis.duplicate({ keyPrefix: '', lazyConnect: false, enableOfflineQueue: true });
  try {
    await deleteAllWithPrefix(raw, prefix);
  } finally {
    raw.disconnect();
  }
}

/**
 * The key ring of this test file's processes (SECRETS_KEYS, DESIGN 113): one random key, the
 * same for every config and process of the file, so an API seals what a webhooks worker opens.
 */
export const TEST_SECRETS_KEYS = `test1:${randomBytes(32).toString('base64')}`;

/**
 * Service configuration for a test: the run's services, this file's database and names. The
 * database login is a process kind's own (the API's unless `DATABASE_URL` says otherwise), as
 * deployed: a DATABASE_URL that logs in as the owner is refused here, so no test can run role
 * code with more rights than production gives it, unless it sets DB_ALLOW_PRIVILEGED_LOGIN=true
 * (only the tests of that refusal do).
 */
export function testConfig(overrides: Record<string, string> = {}): Config {
  const services = inject('services');
  const databaseUrl = overrides.DATABASE_URL ?? roleDatabaseUrl(services.databaseUrl, 'api');
  if (
    new URL(databaseUrl).username === new URL(services.databaseUrl).username &&
    overrides.DB_ALLOW_PRIVILEGED_LOGIN !== 'true'
  ) {
    throw new Error(
      'testConfig: DATABASE_URL is the owner login; run role code as its own login ' +
        "(db.roleUrl('api' | 'relay' | 'settlement'))",
    );
  }
  return loadConfig({
    NODE_ENV: 'test',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    PORT: '0',
    DATABASE_URL: databaseUrl,
    REDIS_URL: services.redisUrl,
    // The run's Cluster, unless the test points REDIS_URL at a node of its own (an outage).
    ...(services.redisClusterNodes && overrides.REDIS_URL === undefined
      ? { REDIS_CLUSTER_NODES: services.redisClusterNodes }
      : {}),
    ...(services.redisTlsCaFile ? { REDIS_TLS_CA_FILE: services.redisTlsCaFile } : {}),
    KAFKA_BROKERS: services.kafkaBrokers,
    REDIS_KEY_PREFIX: `test:${uniqueSuffix()}:`,
    KAFKA_TOPIC_PAYMENTS: uniqueTopic('payments'),
    KAFKA_TOPIC_DLQ: uniqueTopic('dlq'),
    KAFKA_CONSUMER_GROUP: `group-${uniqueSuffix()}`,
    SECRETS_KEYS: TEST_SECRETS_KEYS,
    ...overrides,
  });
}
