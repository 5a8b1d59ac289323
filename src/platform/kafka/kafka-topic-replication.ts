// First: it replaces a kafkajs module before kafkajs loads (kafkajs-read-committed.ts).
import './kafkajs-read-committed.js';
import kafkajs, { type Admin } from 'kafkajs';
import type { Config } from '../config/config.js';
import type { Logger } from '../telemetry/logger.js';
import { untilTopicsKnown } from './kafka-topics-known.js';

// How many copies the service's topics keep, and the start-up check that production's keep
// enough (DESIGN 122). Part of the Kafka boundary (kafka.ts).

/** Replication of the topics the service creates; unset fields: the broker's defaults. */
export interface TopicReplication {
  replicationFactor?: number | undefined;
  minInsyncReplicas?: number | undefined;
}

/** KAFKA_TOPIC_REPLICATION_FACTOR and KAFKA_TOPIC_MIN_INSYNC_REPLICAS, for ensureTopics. */
export function configuredReplication(
  config: Partial<
    Pick<Config, 'KAFKA_TOPIC_REPLICATION_FACTOR' | 'KAFKA_TOPIC_MIN_INSYNC_REPLICAS'>
  >,
): TopicReplication {
  return {
    replicationFactor: config.KAFKA_TOPIC_REPLICATION_FACTOR,
    minInsyncReplicas: config.KAFKA_TOPIC_MIN_INSYNC_REPLICAS,
  };
}

/**
 * What production requires of every topic the service writes or reads: three copies, two of them
 * acknowledging each write (the producers send acks=all), so losing one broker loses no
 * acknowledged event and refuses no write.
 */
export const PRODUCTION_REPLICATION = { replicationFactor: 3, minInsyncReplicas: 2 } as const;

// kafkajs is CommonJS; its enum is no named ESM export.
const TOPIC_RESOURCE = kafkajs.ConfigResourceTypes.TOPIC;

/**
 * What falls short of `floor` in the actual topics, one text per topic naming it (its smallest
 * partition replica count, its effective min.insync.replicas); empty when all are fine.
 */
export async function replicationShortfalls(
  admin: Admin,
  topics: readonly string[],
  floor: Required<TopicReplication>,
): Promise<string[]> {
  // A topic just created may not be known to every broker yet: asked again until it is.
  const what = `Kafka topics ${topics.join(', ')} were not known to the cluster`;
  const { topics: metadata } = await untilTopicsKnown(what, () =>
    admin.fetchTopicMetadata({ topics: [...topics] }),
  );
  const { resources } = await untilTopicsKnown(what, () =>
    admin.describeConfigs({
      includeSynonyms: false,
      resources: topics.map((name) => ({
        type: TOPIC_RESOURCE,
        name,
        configNames: ['min.insync.replicas'],
      })),
    }),
  );
  const shortfalls: string[] = [];
  for (const topic of topics) {
    const partitions = metadata.find((entry) => entry.name === topic)?.partitions ?? [];
    const factor =
      partitions.length === 0
        ? 0
        : Math.min(...partitions.map((partition) => partition.replicas.length));
    const entry = resources
      .find((resource) => resource.resourceName === topic)
      ?.configEntries.find((config) => config.configName === 'min.insync.replicas');
    const minIsr = Number(entry?.configValue ?? 1);
    const problems = [
      ...(factor < floor.replicationFactor
        ? [`replication factor ${String(factor)} (at least ${String(floor.replicationFactor)})`]
        : []),
      ...(minIsr < floor.minInsyncReplicas
        ? [`min.insync.replicas ${String(minIsr)} (at least ${String(floor.minInsyncReplicas)})`]
        : []),
    ];
    if (problems.length > 0) shortfalls.push(`Kafka topic ${topic} has ${problems.join(' and ')}`);
  }
  return shortfalls;
}

/**
 * The start-up check of a role that writes or reads `topics` (after ensureTopics): with
 * NODE_ENV=production, a topic below PRODUCTION_REPLICATION calls `refuse` with one line naming
 * it (the role exits); elsewhere a topic below the configured replication is one warning.
 */
export async function guardTopicReplication(
  admin: Admin,
  config: Pick<
    Config,
    'NODE_ENV' | 'KAFKA_TOPIC_REPLICATION_FACTOR' | 'KAFKA_TOPIC_MIN_INSYNC_REPLICAS'
  >,
  topics: readonly string[],
  logger: Logger,
  refuse: (line: string) => void,
): Promise<void> {
  const production = config.NODE_ENV === 'production';
  const floor = production
    ? PRODUCTION_REPLICATION
    : {
        replicationFactor: config.KAFKA_TOPIC_REPLICATION_FACTOR ?? 1,
        minInsyncReplicas: config.KAFKA_TOPIC_MIN_INSYNC_REPLICAS ?? 1,
      };
  if (floor.replicationFactor <= 1 && floor.minInsyncReplicas <= 1) return;
  const [first] = await replicationShortfalls(admin, topics, floor);
  if (first === undefined) return;
  if (production) refuse(`${first}: refused with NODE_ENV=production (DESIGN 122)`);
  else logger.warn(`${first}, below KAFKA_TOPIC_REPLICATION_FACTOR / MIN_INSYNC_REPLICAS`);
}
