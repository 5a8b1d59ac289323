import { randomUUID } from 'node:crypto';
import {
  createIdempotentProducer,
  createKafka,
  type KafkaClient,
  type KafkaClientConfig,
  type KafkaClientOptions,
  type Producer,
} from '../platform/kafka/kafka.js';
import type { Logger } from '../platform/telemetry/logger.js';

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

/** createKafka's connectionTimeout (src/platform/kafka/kafka-client.ts): one connect to a broker. */
const CONNECT_TIMEOUT_MS = 3_000;

/**
 * The longest one relay send can go on from its start until its last produce request leaves
 * the process, when every step takes its full timeout: a connect to the partition's leader, one
 * metadata request (a topic the producer has not sent to yet), (retries + 1) produce requests,
 * and the kafkajs backoff between them (each at most maxRetryTime). 47 s with the 10 s default
 * request timeout. The relay stops sending a claimed batch this long before its lease ends
 * (DESIGN 38), so a send that starts in time is over before another relay can claim the rows.
 */
export function relaySendBoundMs(requestTimeoutMs: number): number {
  const { retries, maxRetryTime } = RELAY_KAFKA_OPTIONS.retry;
  return CONNECT_TIMEOUT_MS + (retries + 2) * requestTimeoutMs + retries * maxRetryTime;
}

/** The Kafka client a relay should be given (see RELAY_KAFKA_OPTIONS). */
export function createRelayKafka(config: KafkaClientConfig, logger: Logger): KafkaClient {
  return createKafka(config, logger, {
    ...RELAY_KAFKA_OPTIONS,
    // KAFKA_REQUEST_TIMEOUT_MS when set (its default is the same 10 s).
    requestTimeout: config.KAFKA_REQUEST_TIMEOUT_MS ?? RELAY_KAFKA_OPTIONS.requestTimeout,
  });
}

/** One relay's producer: connected on demand, replaced after any failed send. */
export interface RelayProducer {
  /** The current producer, connecting a new one when the last was discarded. */
  connected: () => Promise<Producer>;
  /**
   * Drops the current producer (the next send gets a new producer id): kafkajs rolls back its
   * sequence numbers on failure, and a partition that did append part of the request would then
   * see different records under the same sequence, which the broker may drop as duplicates.
   * A new producer id costs one round trip and makes that impossible.
   */
  discard: () => void;
  /** Waits for a connect in progress and disconnects. */
  close: () => Promise<void>;
}

/**
 * A relay's producer, connected on demand and replaced after a failed send. With `transactional`
 * (the dead letters' producer, DESIGN 49) it is a transactional producer under a transactional id
 * of this RelayProducer's, kept across replacements: the producer that replaces a discarded one
 * registers the same id, which fences the discarded one and aborts its open transaction; Kafka
 * aborts a transaction left open longer than `transactionTimeoutMs`.
 */
export function createRelayProducer(
  kafka: KafkaClient,
  transactional?: { clientId: string; transactionTimeoutMs: number; purpose: string },
): RelayProducer {
  const transactionOptions = transactional && {
    transactionalId: `${transactional.clientId}-${transactional.purpose}-${randomUUID()}`,
    transactionTimeoutMs: transactional.transactionTimeoutMs,
  };
  let producer: Producer | undefined;
  let connecting: Promise<Producer> | undefined;

  function connected(): Promise<Producer> {
    if (producer) return Promise.resolve(producer);
    connecting ??= (async () => {
      const fresh = createIdempotentProducer(kafka, {
        retries: RELAY_KAFKA_OPTIONS.retry.retries,
        ...transactionOptions,
      });
      try {
        await fresh.connect();
      } catch (error) {
        await fresh.disconnect().catch(() => undefined);
        throw error;
      }
      producer = fresh;
      return fresh;
    })().finally(() => {
      connecting = undefined;
    });
    return connecting;
  }

  return {
    connected,
    discard: () => {
      const old = producer;
      producer = undefined;
      void old?.disconnect().catch(() => undefined);
    },
    close: async () => {
      await connecting?.catch(() => undefined);
      const last = producer;
      producer = undefined;
      await last?.disconnect();
    },
  };
}
