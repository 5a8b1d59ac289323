import type { Config } from '../platform/config.js';
import { createKafka, type KafkaClient, type KafkaClientOptions } from '../platform/kafka.js';
import type { Logger } from '../platform/logger.js';

/**
 * The relay's Kafka client gives up quickly: 2 retries 200-400 ms apart, 10 s per request.
 * A send, connect included, then fails within a second when Kafka is down, and within ~40 s in
 * the worst case (a broker that accepts connections and never answers), below RELAY_LEASE_MS.
 * Waiting out an outage is the relay loop's job (its backoff), not kafkajs' (whose default for an
 * idempotent producer is to retry forever inside one send).
 */
export const RELAY_KAFKA_OPTIONS = {
  retry: { retries: 2, initialRetryTime: 200, maxRetryTime: 2_000 },
  requestTimeout: 10_000,
} satisfies KafkaClientOptions;

/** The Kafka client a relay should be given (see RELAY_KAFKA_OPTIONS). */
export function createRelayKafka(
  config: Pick<Config, 'KAFKA_BROKERS' | 'KAFKA_CLIENT_ID'>,
  logger: Logger,
): KafkaClient {
  return createKafka(config, logger, RELAY_KAFKA_OPTIONS);
}
