import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
export const REPO_ROOT = path.resolve(import.meta.dirname, '../..');

/** Where the integration tests' Postgres, Redis and Kafka come from, and how to stop them. */
export interface Services {
  source: 'env' | 'testcontainers' | 'native';
  databaseUrl: string;
  redisUrl: string;
  kafkaBrokers: string;
}

/**
 * 1. DATABASE_URL / REDIS_URL / KAFKA_BROKERS when all three are given (CI, a shared stack);
 * 2. otherwise testcontainers when a Docker engine answers;
 * 3. otherwise the native stack (`scripts/stack.sh start`, idempotent).
 */
export async function resolveServices(): Promise<{
  services: Services;
  stop: () => Promise<void>;
}> {
  const { DATABASE_URL, REDIS_URL, KAFKA_BROKERS } = process.env;
  if (DATABASE_URL && REDIS_URL && KAFKA_BROKERS) {
    return {
      services: {
        source: 'env',
        databaseUrl: DATABASE_URL,
        redisUrl: REDIS_URL,
        kafkaBrokers: KAFKA_BROKERS,
      },
      stop: () => Promise.resolve(),
    };
  }
  if (await dockerAnswers()) return startContainers();
  await run('bash', [path.join(REPO_ROOT, 'scripts/stack.sh'), 'start'], {
    cwd: REPO_ROOT,
    maxBuffer: 16 * 1024 * 1024,
  });
  return {
    services: {
      source: 'native',
      databaseUrl: 'postgres://payments:payments@127.0.0.1:5432/payments',
      redisUrl: 'redis://127.0.0.1:6379',
      kafkaBrokers: '127.0.0.1:9092',
    },
    // The native stack is shared with `npm run up`; leave it running.
    stop: () => Promise.resolve(),
  };
}

async function dockerAnswers(): Promise<boolean> {
  try {
    await run('docker', ['info', '--format', '{{.ServerVersion}}'], { timeout: 5_000 });
    return true;
  } catch {
    return false;
  }
}

/** The same images and versions as docker-compose.yml. */
async function startContainers(): Promise<{ services: Services; stop: () => Promise<void> }> {
  const [{ PostgreSqlContainer }, { RedisContainer }, { KafkaContainer }] = await Promise.all([
    import('@testcontainers/postgresql'),
    import('@testcontainers/redis'),
    import('@testcontainers/kafka'),
  ]);
  const [postgres, redis, kafka] = await Promise.all([
    new PostgreSqlContainer('postgres:15-alpine')
      .withUsername('payments')
      .withPassword('payments')
      .withDatabase('payments')
      .start(),
    new RedisContainer('redis:7-alpine').start(),
    new KafkaContainer('confluentinc/cp-kafka:7.9.0').withKraft().start(),
  ]);
  return {
    services: {
      source: 'testcontainers',
      databaseUrl: postgres.getConnectionUri(),
      redisUrl: redis.getConnectionUrl(),
      kafkaBrokers: `${kafka.getHost()}:${kafka.getMappedPort(9093)}`,
    },
    stop: async () => {
      await Promise.all([postgres.stop(), redis.stop(), kafka.stop()]);
    },
  };
}
