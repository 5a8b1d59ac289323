import type { Admin } from 'kafkajs';

/**
 * The Kafka boundary: this module and the kafka-*.ts modules it re-exports are the only ones
 * that import kafkajs. kafkajs 2.2.4 is its last release and its maintainers asked for
 * successors, so the rest of the code depends on these few functions, not on kafkajs.
 */
export type { Admin, Consumer, Producer } from 'kafkajs';
export { createKafka, type KafkaClient, type KafkaClientOptions } from './kafka-client.js';
export {
  consume,
  consumeBatches,
  createConsumer,
  type BatchOptions,
  type ConsumedBatch,
  type ConsumedRecord,
} from './kafka-consumer.js';
export { readTopicToEnd } from './kafka-read-to-end.js';
export {
  createIdempotentProducer,
  isRecordRejected,
  publish,
  type ProducerRecord,
} from './kafka-producer.js';

/** A real metadata round trip to the cluster, not just an open socket. */
export async function pingKafka(admin: Admin): Promise<void> {
  const cluster = await admin.describeCluster();
  if (cluster.brokers.length === 0) throw new Error('kafka cluster reports no brokers');
}

/**
 * Creates the topics that do not exist yet; existing ones are left as they are. `topicConfig`
 * holds topic-level settings for the new ones (e.g. `max.message.bytes`).
 */
export async function ensureTopics(
  admin: Admin,
  topics: readonly string[],
  numPartitions = 3,
  topicConfig: Readonly<Record<string, string>> = {},
): Promise<void> {
  const existing = new Set(await admin.listTopics());
  const missing = topics.filter((topic) => !existing.has(topic));
  if (missing.length === 0) return;
  const configEntries = Object.entries(topicConfig).map(([name, value]) => ({ name, value }));
  // kafkajs answers false (no error) when another process created them first, the usual case
  // when several roles start together; its log line about it is quieted (isBenign).
  await admin.createTopics({
    waitForLeaders: true,
    // Replication factor comes from the broker default (default.replication.factor).
    topics: missing.map((topic) => ({ topic, numPartitions, configEntries })),
  });
}
