import type { Admin } from 'kafkajs';
import type { TopicReplication } from './kafka-topic-replication.js';
import { untilTopicsKnown } from './kafka-topics-known.js';

/**
 * The Kafka boundary: this module and the kafka-*.ts modules it re-exports are the only ones
 * that import kafkajs. kafkajs 2.2.4 is its last release and its maintainers asked for
 * successors, so the rest of the code depends on these few functions, not on kafkajs.
 */
export type { Admin, Consumer, Producer } from 'kafkajs';
export {
  createKafka,
  type KafkaClient,
  type KafkaClientConfig,
  type KafkaClientOptions,
} from './kafka-client.js';
export {
  consume,
  consumeBatches,
  createConsumer,
  type BatchOptions,
  type ConsumedBatch,
  type ConsumedRecord,
} from './kafka-consumer.js';
export { readTopicToEnd } from './kafka-read-to-end.js';
export { untilTopicsKnown } from './kafka-topics-known.js';
export {
  configuredReplication,
  guardTopicReplication,
  PRODUCTION_REPLICATION,
  replicationShortfalls,
  type TopicReplication,
} from './kafka-topic-replication.js';
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
 * holds topic-level settings for the new ones (e.g. `max.message.bytes`); `replication` their
 * replication factor and min.insync.replicas (unset: the broker's defaults; DESIGN 122).
 */
export async function ensureTopics(
  admin: Admin,
  topics: readonly string[],
  numPartitions = 3,
  topicConfig: Readonly<Record<string, string>> = {},
  replication: TopicReplication = {},
): Promise<void> {
  const existing = new Set(await admin.listTopics());
  const missing = topics.filter((topic) => !existing.has(topic));
  if (missing.length === 0) return;
  const { replicationFactor, minInsyncReplicas } = replication;
  const configEntries = Object.entries({
    ...topicConfig,
    ...(minInsyncReplicas === undefined
      ? {}
      : { 'min.insync.replicas': String(minInsyncReplicas) }),
  }).map(([name, value]) => ({ name, value }));
  // kafkajs answers false (no error) when another process created them first, the usual case
  // when several roles start together; its log line about it is quieted (isBenign).
  await admin.createTopics({
    // Waited for below: kafkajs' own wait asks the broker that created them, which on a cluster
    // of several may not know them yet and answers "does not host this topic-partition".
    waitForLeaders: false,
    // Unset: the broker's default.replication.factor (-1 asks for it).
    topics: missing.map((topic) => ({
      topic,
      numPartitions,
      replicationFactor: replicationFactor ?? -1,
      configEntries,
    })),
  });
  await waitForLeaders(admin, missing);
}

/** Polls the metadata until every partition of `topics` has a leader (a producer can send). */
async function waitForLeaders(admin: Admin, topics: readonly string[]): Promise<void> {
  await untilTopicsKnown(`Kafka topics ${topics.join(', ')} got no leader`, async () => {
    const { topics: metadata } = await admin.fetchTopicMetadata({ topics: [...topics] });
    const led = metadata.filter(
      (topic) =>
        topic.partitions.length > 0 && topic.partitions.every((partition) => partition.leader >= 0),
    );
    return led.length === topics.length ? true : undefined;
  });
}
