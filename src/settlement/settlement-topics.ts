import type { Config } from '../platform/config/config.js';
import { configuredReplication, ensureTopics, type Admin } from '../platform/kafka/kafka.js';

/**
 * The topics settlement reads and writes, created when missing: the payments topic, and the
 * dead-letter topic with an explicit retention (KAFKA_TOPIC_DLQ_RETENTION_SECONDS, DESIGN 111)
 * rather than the broker's default. Existing topics are left as they are (kafkajs has no
 * incremental config change; docs/operations.md shows how to set it on an existing topic).
 */
export async function ensureSettlementTopics(
  admin: Admin,
  config: Pick<
    Config,
    | 'KAFKA_TOPIC_PAYMENTS'
    | 'KAFKA_TOPIC_DLQ'
    | 'KAFKA_TOPIC_PARTITIONS'
    | 'KAFKA_TOPIC_DLQ_RETENTION_SECONDS'
  > &
    Partial<Pick<Config, 'KAFKA_TOPIC_REPLICATION_FACTOR' | 'KAFKA_TOPIC_MIN_INSYNC_REPLICAS'>>,
): Promise<void> {
  const replication = configuredReplication(config);
  await ensureTopics(
    admin,
    [config.KAFKA_TOPIC_PAYMENTS],
    config.KAFKA_TOPIC_PARTITIONS,
    {},
    replication,
  );
  await ensureTopics(
    admin,
    [config.KAFKA_TOPIC_DLQ],
    config.KAFKA_TOPIC_PARTITIONS,
    { 'retention.ms': String(config.KAFKA_TOPIC_DLQ_RETENTION_SECONDS * 1_000) },
    replication,
  );
}
