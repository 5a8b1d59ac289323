import {
  Kafka,
  logLevel as KafkaLogLevel,
  Partitioners,
  type Admin,
  type LogEntry,
  type Producer,
} from 'kafkajs';
import type { Config } from './config.js';
import type { Logger } from './logger.js';

/**
 * The only module that imports kafkajs. kafkajs 2.2.4 is its last release and its maintainers
 * asked for successors, so the rest of the code depends on these few functions, not on kafkajs.
 */
export type { Admin, Consumer, Producer } from 'kafkajs';
export type KafkaClient = Kafka;

export function createKafka(
  config: Pick<Config, 'KAFKA_BROKERS' | 'KAFKA_CLIENT_ID'>,
  logger: Logger,
): KafkaClient {
  const kafkaLogger = logger.child({ component: 'kafkajs' });
  return new Kafka({
    clientId: config.KAFKA_CLIENT_ID,
    brokers: config.KAFKA_BROKERS,
    connectionTimeout: 3_000,
    logLevel: KafkaLogLevel.WARN,
    logCreator:
      () =>
      ({ level, log }: LogEntry) => {
        // pino adds its own time; kafkajs' timestamp and logger name are noise.
        const { message, timestamp: _timestamp, logger: _logger, ...extra } = log;
        if (level === KafkaLogLevel.ERROR || level === KafkaLogLevel.WARN) {
          // kafkajs logs every reconnect attempt at ERROR; for us that is a warning, the
          // caller decides what must be acted on.
          kafkaLogger.warn(extra, message);
        } else {
          kafkaLogger.debug(extra, message);
        }
      },
  });
}

/**
 * The idempotent producer: acks from all in-sync replicas, and one request in flight because
 * kafkajs has known ordering issues with concurrent idempotent sends.
 */
export function createIdempotentProducer(kafka: KafkaClient): Producer {
  return kafka.producer({
    idempotent: true,
    maxInFlightRequests: 1,
    allowAutoTopicCreation: false,
    createPartitioner: Partitioners.DefaultPartitioner,
  });
}

/** A real metadata round trip to the cluster, not just an open socket. */
export async function pingKafka(admin: Admin): Promise<void> {
  const cluster = await admin.describeCluster();
  if (cluster.brokers.length === 0) throw new Error('kafka cluster reports no brokers');
}

/** Creates the topics that do not exist yet; existing ones are left as they are. */
export async function ensureTopics(
  admin: Admin,
  topics: readonly string[],
  numPartitions = 3,
): Promise<void> {
  const existing = new Set(await admin.listTopics());
  const missing = topics.filter((topic) => !existing.has(topic));
  if (missing.length === 0) return;
  await admin.createTopics({
    waitForLeaders: true,
    // Replication factor comes from the broker default (default.replication.factor).
    topics: missing.map((topic) => ({ topic, numPartitions })),
  });
}
