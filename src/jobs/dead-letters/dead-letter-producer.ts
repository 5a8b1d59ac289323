import { createRelayProducer } from '../../outbox/relay-kafka.js';
import { publish, type KafkaClient } from '../../platform/kafka/kafka.js';
import { lettersCommitted, withoutLetters, type LetterBatches } from './dead-letter-in-doubt.js';
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
 * hang. A commit that went out unanswered (its coordinator killed) may have committed: the next
 * registration settles it, and a read of the topic says whether its letters are there
 * (dead-letter-in-doubt.ts); found ones count as sent and are never sent again.
 */
export function createDeadLetterProducer(kafka: KafkaClient, clientId: string): DeadLetterProducer {
  const producer = createRelayProducer(kafka, {
    clientId,
    purpose: 'dead-letters',
    transactionTimeoutMs: 60_000,
  });
  /** Letters of an unanswered commit found on the topic: never sent again (kept for the process). */
  const onTopic = new Set<string>();
  /** The letters of an unanswered commit not settled yet (Kafka still unreachable). */
  let inDoubt: LetterBatches | null = null;
  return {
    connected: async () => {
      await producer.connected();
    },
    send: async (batches) => {
      if (inDoubt !== null) {
        // A commit of an earlier send went unanswered and could not be settled then: settle it
        // first, so letters it committed are not sent twice.
        for (const identity of await lettersCommitted(kafka, producer.connected, inDoubt))
          onTopic.add(identity);
        inDoubt = null;
      }
      const pending = withoutLetters(batches, onTopic);
      if (pending.length === 0) return;
      let committing = false;
      try {
        const transaction = await (await producer.connected()).transaction();
        await publish(transaction, pending);
        committing = true;
        await transaction.commit();
      } catch (error) {
        // No abort: the next producer's registration fences this one and aborts its
        // transaction, also when the broker is frozen now and answers only later.
        producer.discard();
        if (!committing) throw error;
        // The commit went out and no answer came back (its coordinator was killed): it may have
        // committed. The next registration finishes it either way; then the topic says which.
        inDoubt = pending;
        const committed = await lettersCommitted(kafka, producer.connected, pending);
        inDoubt = null;
        for (const identity of committed) onTopic.add(identity);
        if (withoutLetters(pending, committed).length > 0) throw error;
      }
    },
    close: () => producer.close(),
  };
}
