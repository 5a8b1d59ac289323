import { createIdempotentProducer, type KafkaClient, type Producer } from '../platform/kafka.js';
import { RELAY_KAFKA_OPTIONS } from './relay-kafka.js';

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

export function createRelayProducer(kafka: KafkaClient): RelayProducer {
  let producer: Producer | undefined;
  let connecting: Promise<Producer> | undefined;

  function connected(): Promise<Producer> {
    if (producer) return Promise.resolve(producer);
    connecting ??= (async () => {
      const fresh = createIdempotentProducer(kafka, { retries: RELAY_KAFKA_OPTIONS.retry.retries });
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
