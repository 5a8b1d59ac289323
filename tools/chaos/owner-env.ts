import type { RunResources } from './run-resources.js';
import type { StackEndpoints } from './stack-control.js';

/** The owner's environment on the run's resources: migrations, the merchant CLIs and verify. */
export function ownerEnv(resources: RunResources, endpoints: StackEndpoints): NodeJS.ProcessEnv {
  return {
    ...process.env,
    // The HA topology's TLS, SASL, Sentinel and replication settings (none on the single node).
    ...endpoints.extraEnv,
    DATABASE_URL: resources.databaseUrl,
    // Migrations too go to the run's database, whatever `scripts/stack.sh env` exported.
    MIGRATION_DATABASE_URL: resources.databaseUrl,
    REDIS_URL: endpoints.REDIS_URL,
    KAFKA_BROKERS: endpoints.KAFKA_BROKERS,
    REDIS_KEY_PREFIX: resources.redisPrefix,
    KAFKA_TOPIC_PAYMENTS: resources.paymentsTopic,
    KAFKA_TOPIC_DLQ: resources.dlqTopic,
    KAFKA_CONSUMER_GROUP: resources.consumerGroup,
    HOST: '127.0.0.1',
    LOG_FORMAT: 'json',
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'info',
  };
}
