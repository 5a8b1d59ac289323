import { randomUUID } from 'node:crypto';
import { RELAY_KAFKA_OPTIONS } from '../outbox/relay-kafka.js';
import {
  createIdempotentProducer,
  publish,
  type KafkaClient,
  type Producer,
} from '../platform/kafka.js';
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
 * is the relay's (bounded retries and request timeouts): a send fails, it does not hang.
 */
export function createDeadLetterProducer(kafka: KafkaClient, clientId: string): DeadLetterProducer {
  const transactionalId = `${clientId}-dead-letters-${randomUUID()}`;
  let producer: Producer | undefined;
  let connecting: Promise<Producer> | undefined;

  function connected(): Promise<Producer> {
    if (producer) return Promise.resolve(producer);
    connecting ??= (async () => {
      const fresh = createIdempotentProducer(kafka, {
        retries: RELAY_KAFKA_OPTIONS.retry.retries,
        transactionalId,
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

  function discard(): void {
    const old = producer;
    producer = undefined;
    void old?.disconnect().catch(() => undefined);
  }

  return {
    connected: async () => {
      await connected();
    },
    send: async (batches) => {
      try {
        const transaction = await (await connected()).transaction();
        await publish(transaction, batches);
        await transaction.commit();
      } catch (error) {
        // No abort: the next producer's registration fences this one and aborts its
        // transaction, also when the broker is frozen now and answers only later.
        discard();
        throw error;
      }
    },
    close: async () => {
      await connecting?.catch(() => undefined);
      const last = producer;
      producer = undefined;
      await last?.disconnect();
    },
  };
}
