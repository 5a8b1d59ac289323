import { createRelayProducer } from '../../outbox/relay-kafka.js';
import { publish, type KafkaClient } from '../../platform/kafka/kafka.js';
import type { SendDeadLetters } from './dead-letter-store.js';

/** The dead-letter publisher's Kafka producer: transactional, replaced after a failed send. */
export interface DeadLetterProducer {
  /** Connects (once) and registers the transactional id. */
  connected: () => Promise<void>;
  /** Sends a batch of letters in one transaction; rejects when it was not committed. */
  send: SendDeadLetters;
  close: () => Promise<void>;
}

/**
 * Dead letters go to their topic exactly once for read-committed consumers (kafkajs' default,
 * dlq:replay, verify): each batch is sent in a Kafka transaction of a producer whose
 * transactional id is this process's, and a failed send (a frozen broker's timeout) drops the
 * producer. The next send's producer registers the same transactional id, which bumps its epoch:
 * the broker aborts the failed transaction, so records of it that a frozen broker appends late
 * are never visible, and the retried letters are the only committed copy (DESIGN 49). The client
 * and producer are the relay's (bounded retries and request timeouts): a send fails, it does not
 * hang.
 */
export function createDeadLetterProducer(kafka: KafkaClient, clientId: string): DeadLetterProducer {
  const producer = createRelayProducer(kafka, {
    clientId,
    purpose: 'dead-letters',
    transactionTimeoutMs: 60_000,
  });
  return {
    connected: async () => {
      await producer.connected();
    },
    send: async (batches) => {
      try {
        const transaction = await (await producer.connected()).transaction();
        await publish(transaction, batches);
        await transaction.commit();
      } catch (error) {
        // No abort: the next producer's registration fences this one and aborts its
        // transaction, also when the broker is frozen now and answers only later.
        producer.discard();
        throw error;
      }
    },
    close: () => producer.close(),
  };
}
