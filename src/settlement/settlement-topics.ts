import type { Config } from '../platform/config/config.js';
import { ensureTopics, type Admin } from '../platform/kafka/kafka.js';

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
  >,
): Promise<void> {
  await ensureTopics(admin, [config.KAFKA_TOPIC_PAYMENTS], config.KAFKA_TOPIC_PARTITIONS);
  await ensureTopics(admin, [config.KAFKA_TOPIC_DLQ], config.KAFKA_TOPIC_PARTITIONS, {
    'retention.ms': String(config.KAFKA_TOPIC_DLQ_RETENTION_SECONDS * 1_000),
  });
}
